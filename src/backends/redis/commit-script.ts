/**
 * The one Lua script of the Redis store: compare-and-set on the store's version.
 *
 * A client decides on its cached snapshot (the pure functions of core/decide) and sends the changes
 * here with the snapshot's epoch and version. The script, atomic on the server, commits them only
 * if the store is still at that version and the server's clock still lies in the window the
 * decision holds for; otherwise it changes nothing and answers what the client needs to decide
 * again. An empty change set just validates the snapshot (a read-only decision).
 *
 * KEYS[1] locks    hash: lock id -> record JSON
 * KEYS[2] meta     hash: epoch, version, fence, tombstones (JSON), tomb_v (version that set them)
 * KEYS[3] changes  list: "version previous id id ..." per recent commit, newest last (delta syncs)
 * KEYS[4] events   list: break events as JSON, newest last
 * ARGV[1] epoch of the snapshot ('' when the client has none: the answer is a full sync)
 * ARGV[2] version of the snapshot
 * ARGV[3] '1': check the window ARGV[4] <= server time < ARGV[5]; '0': trust the client's clock
 * ARGV[4] the time the decision was made at, in epoch ms (the client's lower bound of server time)
 * ARGV[5] the first instant, in epoch ms, at which the decision could come out differently
 * ARGV[6] the fence after the decision (the client takes fences from the server's clock in
 *         microseconds, or one past the last fence when that is larger: see redis-store.ts)
 * ARGV[7] the new tombstones as JSON, or '' when unchanged
 * ARGV[8] the channel to publish the new version on
 * ARGV[9] n, then n pairs (lock id, record JSON) to write; then m, then m lock ids to delete;
 *         then the event JSONs to record
 *
 * Answers, as arrays of strings:
 *   {'ok', epoch, version, now}            committed (or validated), at server time `now`
 *   {'time', epoch, version, now}          nothing done: the snapshot is current but the clock
 *                                          left the window; decide again at `now`
 *   {'sync', epoch, version, now, fence, tombstones or '', 'full' or 'delta', id, json, ...}
 *                                          nothing done: the snapshot is old. 'full' lists every
 *                                          lock; 'delta' lists the locks changed since the
 *                                          client's version, with '' for a deleted one
 */
export const COMMIT_LUA = `
local locks, meta, changes, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local CHANGES_KEPT, EVENTS_KEPT = 128, 1000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function str(n) return string.format('%.0f', n) end

-- A store without metadata is new, or lost its data (a restart without persistence, a flush): it
-- gets a new epoch, so that every cached snapshot is known to be stale.
local epoch = redis.call('HGET', meta, 'epoch')
if not epoch then
  epoch = str(micros)
  redis.call('HSET', meta, 'epoch', epoch, 'version', '0', 'fence', '0', 'tomb_v', '0')
  redis.call('DEL', changes)
end
local version = tonumber(redis.call('HGET', meta, 'version'))
local known = tonumber(ARGV[2]) or -1

if epoch ~= ARGV[1] or version ~= known then
  local reply = {'sync', epoch, str(version), str(now), redis.call('HGET', meta, 'fence')}
  local tomb = redis.call('HGET', meta, 'tombstones') or '[]'
  -- A delta is possible while the changes list still holds the commit made on the client's version.
  local delta = nil
  if epoch == ARGV[1] and known < version then
    local entries = redis.call('LRANGE', changes, 0, -1)
    for _, entry in ipairs(entries) do
      local words = {}
      for word in string.gmatch(entry, '%S+') do words[#words + 1] = word end
      if delta == nil and tonumber(words[2]) == known then delta = {} end
      if delta ~= nil then
        for w = 3, #words do delta[words[w]] = true end
      end
    end
  end
  if delta then
    local tomb_v = tonumber(redis.call('HGET', meta, 'tomb_v') or '0')
    reply[6] = (tomb_v > known) and tomb or ''
    reply[7] = 'delta'
    for id in pairs(delta) do
      reply[#reply + 1] = id
      reply[#reply + 1] = redis.call('HGET', locks, id) or ''
    end
  else
    reply[6] = tomb
    reply[7] = 'full'
    local all = redis.call('HGETALL', locks)
    for i = 1, #all do reply[#reply + 1] = all[i] end
  end
  return reply
end

if ARGV[3] == '1' and (now < tonumber(ARGV[4]) or now >= tonumber(ARGV[5])) then
  return {'time', epoch, str(version), str(now)}
end

local i = 9
local puts = tonumber(ARGV[i])
local touched = {}
for k = 1, puts do
  redis.call('HSET', locks, ARGV[i + 2 * k - 1], ARGV[i + 2 * k])
  touched[#touched + 1] = ARGV[i + 2 * k - 1]
end
i = i + 2 * puts + 1
local dels = tonumber(ARGV[i])
for k = 1, dels do
  redis.call('HDEL', locks, ARGV[i + k])
  touched[#touched + 1] = ARGV[i + k]
end
i = i + dels + 1
local logged = false
for k = i, #ARGV do
  redis.call('RPUSH', events, ARGV[k])
  logged = true
end
if logged then redis.call('LTRIM', events, -EVENTS_KEPT, -1) end

local fence = tonumber(redis.call('HGET', meta, 'fence'))
local changed = puts > 0 or dels > 0 or logged or ARGV[7] ~= '' or tonumber(ARGV[6]) ~= fence
if not changed then return {'ok', epoch, str(version), str(now)} end

-- Versions, like fences, never repeat, even after a restore from an older snapshot: they follow
-- the server's clock in microseconds.
local previous = version
version = math.max(version + 1, micros)
if tonumber(ARGV[6]) > fence then redis.call('HSET', meta, 'fence', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', meta, 'tombstones', ARGV[7], 'tomb_v', str(version)) end
redis.call('HSET', meta, 'version', str(version))
redis.call('RPUSH', changes, str(version) .. ' ' .. str(previous) .. ' ' .. table.concat(touched, ' '))
redis.call('LTRIM', changes, -CHANGES_KEPT, -1)
redis.call('PUBLISH', ARGV[8], str(version))
return {'ok', epoch, str(version), str(now)}
`;
