#!lua
--[[
  Stamp the layout version on an empty keyspace, or report the one already there.
  Run once at load, before anything is read.

  Input:
    KEYS[1] leader lock      (fencing: must hold ARGV[1] unless ARGV[1] is empty)
    KEYS[2] 'layout'         string: the layout version
    KEYS[3] 'queues'         hash: queue uid -> queue record

    ARGV[1] fencing token; '' when no leader election is configured (check skipped)
    ARGV[2] the layout version this server writes

  Output:
    >0  the layout version in Redis (set to ARGV[2] if there was none and no data)
    -1  fenced: the lock does not hold ARGV[1]; nothing was written
    -2  data without a layout version: written by something else; nothing was written
]]
local token = ARGV[1]
if token ~= '' and redis.call('GET', KEYS[1]) ~= token then
  return -1
end

local layout = redis.call('GET', KEYS[2])
if layout then
  return tonumber(layout) or -2
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return -2
end
redis.call('SET', KEYS[2], ARGV[2])
return tonumber(ARGV[2])
