#!lua
--[[
  One bounded step of pruning a queue's transfer marks (`in:<uid>`, written with the messages that
  arrived from another shard or another owner: src/persistence/writer.ts, Transfer and marks).
  A mark answers a sender's second sending of a message; a sender can only send again while it
  still holds the message, which its queue's retention (14 days at most) ends. So a mark is
  deleted once it is older than that and a margin (src/persistence/marks.ts, MARK_LIFETIME_MS).

  A mark's value is `<scope id>:<ms since the epoch when written>`. A mark written before the time
  was recorded holds only `<scope id>`: its age is unknown, so it is stamped with `now`, as if
  written now, and is deleted only a whole lifetime after that, never early.

  Input:
    KEYS[1] the shard's lease   (fencing: must hold ARGV[1] unless ARGV[1] is empty)
    KEYS[2] `in:<uid>`          hash: message id -> mark

    ARGV[1] fencing token; '' skips the check
    ARGV[2] HSCAN cursor: '0' to start a pass over the hash
    ARGV[3] HSCAN COUNT: how many fields this step looks at (about; a hash small enough for
            Redis' compact encoding, hash-max-listpack-entries, comes whole)
    ARGV[4] now, ms since the epoch (the caller's clock, as the marks' times are)
    ARGV[5] the cutoff, ms: marks written before it are deleted

  Output:
    { next cursor ('0': the pass is over), fields looked at, deleted, stamped }
    -1  fenced: the lease does not hold ARGV[1]; nothing was read or written

  One HSCAN per call, never a whole HGETALL: the time a call blocks Redis is bounded by COUNT,
  however large the hash. The cursor stays valid across calls while the hash changes (HSCAN's
  guarantee: a field there for the whole pass is seen at least once).
]]
local token = ARGV[1]
if token ~= '' and redis.call('GET', KEYS[1]) ~= token then
  return -1
end

local reply = redis.call('HSCAN', KEYS[2], ARGV[2], 'COUNT', ARGV[3])
local entries = reply[2]
local now = ARGV[4]
local cutoff = tonumber(ARGV[5])
local deleted, stamped = 0, 0
for i = 1, #entries, 2 do
  local field, value = entries[i], entries[i + 1]
  local colon = string.find(value, ':', 1, true)
  local at = colon and tonumber(string.sub(value, colon + 1))
  if at == nil then
    local scope = colon and string.sub(value, 1, colon - 1) or value
    redis.call('HSET', KEYS[2], field, scope .. ':' .. now)
    stamped = stamped + 1
  elseif at < cutoff then
    redis.call('HDEL', KEYS[2], field)
    deleted = deleted + 1
  end
end
return { reply[1], math.floor(#entries / 2), deleted, stamped }
