#!lua
--[[
  The coordinator writes new owners into the shard map: only while its token still holds the
  coordinator's lock (a coordinator that lost it, paused or cut off, writes nothing), and only
  onto the version it computed from, so a change is never made from an outdated map. Every write
  bumps the version and publishes it, so readers fetch the map at once instead of at their next
  interval.

  Input:
    KEYS[1] 'coordinator'    string: the coordinator's lock, holding its token
    KEYS[2] 'owners'         hash: 'version' -> n, '<shard>' -> owner id

    ARGV[1] the coordinator's token (`<epoch>:<instance id>`)
    ARGV[2] the version the changes were computed from ('0' for a map never written)
    ARGV[3] channel to publish the new version on (not a key: channels have no slot)
    ARGV[4...] pairs: shard (decimal), its new owner id

  Output:
    {0, version}   written: the new version, published
    {-1, version}  fenced: the lock does not hold ARGV[1]; nothing was written
    {-2, version}  the map is at another version than ARGV[2]; nothing was written
]]
local version = tonumber(redis.call('HGET', KEYS[2], 'version') or '0')
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1, version}
end
if version ~= tonumber(ARGV[2]) then
  return {-2, version}
end
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('PUBLISH', ARGV[3], tostring(version))
return {0, version}
