#!lua flags=allow-oom
--[[
  An instance leaves the membership at once (a graceful stop), instead of after its TTL, and says
  so, so that the coordinator moves its shards without waiting for an interval.

  Input:
    KEYS[1] 'members'        hash: instance id -> member record
    KEYS[2] 'member:<id>'    string: the member record, with a TTL

    ARGV[1] instance id
    ARGV[2] channel to announce the leave on

  Output:
     1  it was a member; 'leave <id>' was published
     0  it was not (expired and pruned already); nothing was published
]]
local had = redis.call('DEL', KEYS[2]) + redis.call('HDEL', KEYS[1], ARGV[1])
if had == 0 then
  return 0
end
redis.call('PUBLISH', ARGV[2], 'leave ' .. ARGV[1])
return 1
