#!lua
--[[
  Make the catalog (layout 2, meta `cat:<account>:<region>` hashes) agree with one shard as its
  owner has just loaded it: records of that shard whose queue was not loaded are deleted, loaded
  queues whose record is missing or different are written (src/persistence/catalog-repair.ts).
  Records of other shards are left alone: each shard's owner repairs its own.

  Input:
    KEYS[1] the catalog index (meta `catalogs`): `<account>:<region>` -> '1'

    ARGV[1] the meta key prefix, e.g. '{ssq:meta}:' (a catalog hash is <prefix>cat:<account>:<region>)
    ARGV[2] the shard number
    ARGV[3...] the loaded queues, three values each: `<account>:<region>`, name, record

  Output: { written, deleted }, each a list of `<account>:<region>:<name>`.

  Every catalog hash the index names is read whole: the cost grows with the number of queues of
  every shard, once per shard load. Reads the records' `shard` with cjson, only for those whose
  text names the shard at all.
]]
local prefix = ARGV[1]
local shard = tonumber(ARGV[2])
local needle = '"shard":' .. ARGV[2]

local loaded = {}
for i = 3, #ARGV, 3 do
  local scope = ARGV[i]
  if loaded[scope] == nil then loaded[scope] = {} end
  loaded[scope][ARGV[i + 1]] = ARGV[i + 2]
end

local scopes = {}
for _, scope in ipairs(redis.call('HKEYS', KEYS[1])) do scopes[scope] = true end
for scope in pairs(loaded) do scopes[scope] = true end

local written, deleted = {}, {}
for scope in pairs(scopes) do
  local key = prefix .. 'cat:' .. scope
  local mine = loaded[scope] or {}
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do
    local name, record = all[j], all[j + 1]
    local want = mine[name]
    if want == nil then
      if string.find(record, needle, 1, true) then
        local ok, r = pcall(cjson.decode, record)
        if ok and type(r) == 'table' and r.shard == shard then
          redis.call('HDEL', key, name)
          deleted[#deleted + 1] = scope .. ':' .. name
        end
      end
    elseif want == record then
      mine[name] = false
    end
  end
  local any = false
  for name, record in pairs(mine) do
    any = true
    if record ~= false then
      redis.call('HSET', key, name, record)
      written[#written + 1] = scope .. ':' .. name
    end
  end
  if any then redis.call('HSET', KEYS[1], scope, '1') end
end
return { written, deleted }
