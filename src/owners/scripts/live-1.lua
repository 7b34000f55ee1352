#!lua flags=allow-oom
--[[
  The live members: those of the members hash whose member key has not expired. The others are
  pruned from the hash here, atomically with the check (a member that beats again in between
  cannot be pruned), and each pruning is announced once, by whichever instance did it.

  The member keys are named from ARGV[1] rather than passed as KEYS, since their number varies;
  they are under the same hash tag as KEYS[1] (src/persistence/layout.ts), so on a Redis Cluster
  they are in KEYS[1]'s slot, as apply-4.lua's message hashes are in their shard's.

  allow-oom: pruning frees memory, and reading who is live must not fail when Redis is full.

  Input:
    KEYS[1] 'members'        hash: instance id -> member record

    ARGV[1] the prefix of the member keys ('<meta prefix>member:')
    ARGV[2] channel to announce an expiry on

  Output:
    { the records of the live members, in the hash's order; the least time to live of their keys
      in ms, -1 when none is live }: the readers read again when that one would expire, so a
      crashed member is found gone at its expiry, not up to an interval later
]]
local live = {}
local soonest = -1
for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
  local key = ARGV[1] .. id
  local record = redis.call('GET', key)
  if record then
    live[#live + 1] = record
    local ttl = redis.call('PTTL', key)
    if ttl >= 0 and (soonest < 0 or ttl < soonest) then
      soonest = ttl
    end
  else
    redis.call('HDEL', KEYS[1], id)
    redis.call('PUBLISH', ARGV[2], 'expired ' .. id)
  end
end
return { live, soonest }
