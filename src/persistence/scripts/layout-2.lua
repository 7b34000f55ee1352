#!lua
--[[
  The layout 2 stamp in the meta keys: read it, or write it where there is none. Written once,
  when a keyspace is claimed empty (loader.ts loadMeta) or a migration has copied everything
  (migrate.ts); never changed after.

  Input:
    KEYS[1] meta leader lock (fencing: must hold ARGV[1] unless ARGV[1] is empty)
    KEYS[2] meta 'layout'    hash: version, shards

    ARGV[1] fencing token; '' when no leader election is configured (check skipped)
    ARGV[2] the version to stamp ('2')
    ARGV[3] the number of shards to stamp ('256')
    ARGV[4] '1': stamp when there is no stamp; '0': only read

  Output:
    {version, shards}  what the hash holds after the call ('' for a missing field); both ''
                       when there is no stamp and ARGV[4] is '0'
    -1  fenced: the lock does not hold ARGV[1]; nothing was written
    -2  `layout` is not a hash: not written by this layout; nothing was written
]]
local token = ARGV[1]
if token ~= '' and redis.call('GET', KEYS[1]) ~= token then
  return -1
end
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'hash' and kind ~= 'none' then
  return -2
end
if kind == 'none' and ARGV[4] == '1' then
  redis.call('HSET', KEYS[2], 'version', ARGV[2], 'shards', ARGV[3])
end
local v = redis.call('HMGET', KEYS[2], 'version', 'shards')
return {v[1] or '', v[2] or ''}
