#!lua
--[[
  Release the leader lock (compare-and-DEL) and announce it, so a follower tries at once instead
  of at its next interval.

  Input:
    KEYS[1] leader lock
    KEYS[2] leader info      hash: `released` is set to Redis' TIME in ms

    ARGV[1] token of our term
    ARGV[2] pub/sub channel the followers listen on (not a key: channels have no slot); '' for
            none: a shard's lease goes with the leader lock, whose release is the one announced

  Output:
     1  released, and the token published on ARGV[2] unless it is ''
     0  the lock holds another token, or none: nothing was written or published
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
local t = redis.call('TIME')
redis.call('HSET', KEYS[2], 'released', t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000)))
if ARGV[2] ~= '' then
  redis.call('PUBLISH', ARGV[2], ARGV[1])
end
return 1
