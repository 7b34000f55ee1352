#!lua
--[[
  Apply one group commit: every change the requests of one event-loop tick made, at once.
  The writer (src/persistence/writer.ts) sends queue operations first, then message operations
  grouped by queue; a message of a queue deleted in the same commit is not sent.

  Several calls of one writer may be in flight at once (pipelined on one connection, so Redis
  runs them in the order they were sent). Each names the call before it: a call runs only if the
  one before it was applied, so once a call fails, every later call of its writer writes nothing.

  Input:
    KEYS[1] leader lock      (fencing: must hold ARGV[1] unless ARGV[1] is empty)
    KEYS[2] 'queues'         hash: queue uid -> queue record
    KEYS[3] 'seq'            hash: queue uid -> next message sequence number
    KEYS[4] 'commit'         string: the id of the last call applied (the chain)

    ARGV[1] fencing token; '' when no leader election is configured (check skipped)
    ARGV[2] key prefix, e.g. '{ssq}:' (a queue's messages are in <prefix>m:<uid>)
    ARGV[3] id of the writer's previous call, which KEYS[4] must hold; '' for a writer's first
            call (check skipped)
    ARGV[4] id of this call, stored in KEYS[4] once every operation is written
    ARGV[5...] operations, each an opcode and its arguments:
      'Q' uid record                                queue created or changed
      'D' uid                                       queue deleted, with its messages, FIFO records and
                                                    transfer marks (in:<uid>)
      'P' uid                                       queue purged: all its messages (and receive
                                                    attempts) gone; deduplication records stay
      'M' uid nextSeq n id1 rec1 ... idn recn       n messages written (created or changed)
      'X' uid n id1 ... idn                         n messages deleted
      'S' key n f1 v1 ... fn vn                     n fields set in the hash <prefix><key>
                                                    (d:<uid>, a:<uid>, tasks, tenants, out,
                                                    in:<uid>, cat:<account>:<region>)
      'R' key n f1 ... fn                           n fields deleted from the hash <prefix><key>

  Output:
     0  applied
    -1  fenced: the lock does not hold ARGV[1]; nothing was written
    -3  malformed operation list; nothing after the bad opcode was written, KEYS[4] unchanged
    -4  out of chain: KEYS[4] does not hold ARGV[3] (the previous call was not applied); nothing
        was written

  A script is atomic: Redis runs nothing else while it runs, and the `#!lua` line makes Redis
  refuse it before it starts (nothing written) when the server is over maxmemory or read-only.
  Purges and deletes are UNLINKs: O(1) here, the memory is freed in a background thread.
]]
local token = ARGV[1]
if token ~= '' and redis.call('GET', KEYS[1]) ~= token then
  return -1
end
local previous = ARGV[3]
if previous ~= '' and redis.call('GET', KEYS[4]) ~= previous then
  return -4
end

local prefix = ARGV[2]
local queues = KEYS[2]
local seqs = KEYS[3]
-- Lua's unpack() has a stack limit (~8000): write hashes in slices of at most this many values.
local SLICE = 1000

-- Runs `cmd key ARGV[from..last]` in slices; SLICE is even, so HSET's field/value pairs stay whole.
local function sliced(cmd, key, from, last)
  while from <= last do
    local to = math.min(from + SLICE - 1, last)
    redis.call(cmd, key, unpack(ARGV, from, to))
    from = to + 1
  end
  return last + 1
end

local i = 5
local n = #ARGV
while i <= n do
  local op = ARGV[i]
  local uid = ARGV[i + 1]
  if op == 'M' then
    redis.call('HSET', seqs, uid, ARGV[i + 2])
    i = sliced('HSET', prefix .. 'm:' .. uid, i + 4, i + 3 + 2 * tonumber(ARGV[i + 3]))
  elseif op == 'X' then
    i = sliced('HDEL', prefix .. 'm:' .. uid, i + 3, i + 2 + tonumber(ARGV[i + 2]))
  elseif op == 'S' then
    i = sliced('HSET', prefix .. uid, i + 3, i + 2 + 2 * tonumber(ARGV[i + 2]))
  elseif op == 'R' then
    i = sliced('HDEL', prefix .. uid, i + 3, i + 2 + tonumber(ARGV[i + 2]))
  elseif op == 'Q' then
    redis.call('HSET', queues, uid, ARGV[i + 2])
    i = i + 3
  elseif op == 'P' then
    redis.call('UNLINK', prefix .. 'm:' .. uid, prefix .. 'a:' .. uid)
    i = i + 2
  elseif op == 'D' then
    redis.call('UNLINK', prefix .. 'm:' .. uid, prefix .. 'd:' .. uid, prefix .. 'a:' .. uid, prefix .. 'in:' .. uid)
    redis.call('HDEL', queues, uid)
    redis.call('HDEL', seqs, uid)
    i = i + 2
  else
    return -3
  end
end
redis.call('SET', KEYS[4], ARGV[4])
return 0
