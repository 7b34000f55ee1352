#!lua
--[[
  Close layout 1 to every release that reads it: the first step of a v1 -> v2 migration
  (migrate.ts), and how a start on an empty keyspace claims it for layout 2 (loader.ts loadMeta).

  Fenced, layout 1 reads '2' in `layout` (an older release's load refuses it), its leader lock
  holds a marker without a TTL (an older elector can never take it, and a write fenced on the
  token it held is refused), and `commit` holds the marker (an older writer's next chained call is
  out of chain). The markers stay for good, after the v1 data is deleted.

  Input:
    KEYS[1] v1 leader lock   string
    KEYS[2] v1 'layout'      string: the layout version
    KEYS[3] v1 'commit'      string: the v1 writer's chain
    KEYS[4] v1 'queues'      hash: queue uid -> queue record

    ARGV[1] mode: 'fence' (migrate: fence whatever layout 1 holds) or 'fresh' (fence only a
            keyspace without layout 1 data, else report what is there)
    ARGV[2] the marker for the lock and commit
    ARGV[3] the version written to `layout`: '2'

  Output (a string):
    'fenced'       fenced now or before: `layout` holds ARGV[3]
    'claimed'      the keyspace held no layout 1 and this call fenced it
    'migrating'    'fence': layout 1, fenced by this call
    'v1'           'fresh': layout 1, not fenced (a migration is needed); nothing was written
    'unversioned'  data without a layout version: written by something else; nothing was written
    'layout:<v>'   another value in `layout`; nothing was written
]]
local layout = redis.call('GET', KEYS[2])
if layout == ARGV[3] then
  -- Written again: a fence a crash interrupted is finished, and a repeated one changes nothing.
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('SET', KEYS[3], ARGV[2])
  return 'fenced'
end
if layout == '1' then
  if ARGV[1] == 'fresh' then
    return 'v1'
  end
elseif layout then
  return 'layout:' .. layout
elseif redis.call('EXISTS', KEYS[4]) == 1 then
  return 'unversioned'
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
if layout then
  return 'migrating'
end
return 'claimed'
