#!lua flags=allow-oom
--[[
  An instance's heartbeat: (re)sets its member key with the TTL and its entry in the members hash.
  The first beat, or the first after the key expired (the instance was paused or cut off longer
  than the TTL), is a join and is announced.

  allow-oom: a member key is a few hundred bytes, and an instance must not drop out of the
  membership (moving its shards) because the queues filled Redis up.

  Input:
    KEYS[1] 'members'        hash: instance id -> member record
    KEYS[2] 'member:<id>'    string: the member record, with a TTL

    ARGV[1] instance id
    ARGV[2] member record (JSON: id, address, startedAt)
    ARGV[3] ttl in ms
    ARGV[4] channel to announce a join on (not a key: channels have no slot)

  Output:
     1  joined: the key was not there; 'join <id>' was published
     0  renewed
]]
local existed = redis.call('EXISTS', KEYS[2])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if existed == 1 then
  return 0
end
redis.call('PUBLISH', ARGV[4], 'join ' .. ARGV[1])
return 1
