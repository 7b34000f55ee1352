#!lua
--[[
  Take the leader lock if nobody holds it, for a new term with a new epoch.

  The epoch is INCRed only when the lock is actually taken, so it counts terms, and the token
  `<epoch>:<instance id>` is new at every acquisition: a server that lost the lock and took it
  again never holds a token that an older write of its own could still carry.

  Input:
    KEYS[1] leader lock      string: the token of the term that holds it, with a TTL
    KEYS[2] 'epoch'          string: the last epoch handed out (INCR)
    KEYS[3] leader info      hash: token, since, renewed, released (ms since the epoch, Redis' TIME)

    ARGV[1] instance id (hostname-pid), no ':' needed
    ARGV[2] ttl in ms

  Output:
    {1, token, epoch}        taken: SET lock token NX PX ttl
    {0, holder, pttl}        held by `holder`, which expires in pttl ms; nothing was written
]]
local holder = redis.call('GET', KEYS[1])
if holder then
  return {0, holder, redis.call('PTTL', KEYS[1])}
end
local epoch = redis.call('INCR', KEYS[2])
local token = tostring(epoch) .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], token, 'NX', 'PX', ARGV[2])
local t = redis.call('TIME')
local now = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
redis.call('HSET', KEYS[3], 'token', token, 'since', now, 'renewed', now, 'released', '')
return {1, token, epoch}
