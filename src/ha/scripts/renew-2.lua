#!lua
--[[
  Renew the leader lock: extend its TTL only while it still holds our token (compare-and-PEXPIRE).

  Input:
    KEYS[1] leader lock
    KEYS[2] leader info      hash: `renewed` is set to Redis' TIME in ms

    ARGV[1] token of our term
    ARGV[2] ttl in ms

  Output:
     1  renewed: the lock expires ttl ms from now
     0  the lock holds another token, or none: our term is over; nothing was written
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local t = redis.call('TIME')
redis.call('HSET', KEYS[2], 'renewed', t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000)))
return 1
