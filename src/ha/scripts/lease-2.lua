#!lua
--[[
  Take one shard's lease for the leader's term, or keep it: the shard's writes fence on it.

  Unlike the leader lock (acquire-3.lua) no epoch is spent: the token is the term's, won on the
  meta tag's lock, and carries that epoch already. A lease that another token holds is never
  taken: its term may still be writing, so the caller waits until it expires or is released.

  Input:
    KEYS[1] the shard's lease   string: the token of the term that holds it, with a TTL
    KEYS[2] the lease's info    hash: token, since, renewed, released (ms, Redis' TIME)

    ARGV[1] token of the term (`<epoch>:<instance id>`)
    ARGV[2] ttl in ms

  Output:
    {1}                 held by ARGV[1] now, for ttl ms (taken, or it was ours already)
    {0, holder, pttl}   held by another token, which expires in pttl ms; nothing was written
]]
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return {0, holder, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
local now = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
if holder then
  redis.call('HSET', KEYS[2], 'renewed', now)
else
  redis.call('HSET', KEYS[2], 'token', ARGV[1], 'since', now, 'renewed', now, 'released', '')
end
return {1}
