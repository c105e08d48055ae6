/**
 * The Redis store's commit script, COMMIT_LUA: compare-and-set on the versions a decision read.
 *
 * A client decides on its cached snapshot (the pure functions of core/decide) and sends the changes
 * here with the snapshot's epoch and version. The script, atomic on the server, commits them only
 * if the store is still at that version and the server's clock still lies in the window the
 * decision holds for; otherwise it changes nothing and answers what the client needs to decide
 * again. An empty change set just validates the snapshot (a read-only decision).
 *
 * Each redis.call costs about as much as a whole small command, so the hot path makes six: TIME,
 * one HMGET of the metadata, one HSET of the domain versions, one HSET of the locks with the
 * metadata (and one HDEL of those deleted), one RPUSH, and one XADD when the commit records events;
 * a commit that names waiters adds HLEN, HGETALL and a PUBLISH each.
 *
 * KEYS[1] store    hash: lock id -> record JSON, and the metadata under fields starting with '#':
 *                  #epoch, #version, #fence, #tombstones (JSON), #tomb_v (the version that set
 *                  them), #watch, #dwatch (epoch ms until which some client listens on the
 *                  store's channel, on domains' channels: DOMAIN CHANNELS below)
 * KEYS[2] changes  list: "version previous commit-id id id ..." per commit, newest last, at
 *                  least the last 128 (delta syncs, and recognising a commit sent twice)
 * KEYS[3] history  stream: one entry per commit that records events, its field 'e' the JSON array
 *                  of them (core/events), trimmed to about the last EVENTS_KEPT entries (each
 *                  holds one event at least, so at least that many events are kept)
 * ARGV[1] epoch of the snapshot ('' when the client has none: the answer is a full sync)
 * ARGV[2] version of the snapshot, exactly as this script answered it
 * ARGV[3] '1': check the window ARGV[4] <= server time < ARGV[5]; '0': trust the client's clock;
 *         either followed by 'm' when the change set only takes a new place in line (new tickets,
 *         see MERGE below; after '0', the client's lower bound of server time in epoch ms may
 *         follow the 'm'), or by 'r' and, one per line after it, the JSON strings of agents when
 *         it may be rebased (REBASE below)
 * ARGV[4] the time the decision was made at, in epoch ms (the client's lower bound of server time;
 *         after '0', the time of the handle's own clock)
 * ARGV[5] the first instant, in epoch ms, at which the decision could come out differently
 * ARGV[6] the fence after the decision (the store's, unless the decision granted some: the client
 *         takes fences from the server's clock in microseconds, or one past the last fence when
 *         that is larger; see redis-store.ts)
 * ARGV[7] the new tombstones as JSON, or '' when unchanged
 * ARGV[8] the channel to publish each commit on while someone listens: lines of its changes-list
 *         entry, the fence after it, its tombstones ('' unchanged), then each record written
 * ARGV[9] a fresh id for this commit ('' to validate only): a commit that arrives again (its answer
 *         lost, ioredis sent it anew) answers 'ok' with the version it made, not judged stale
 * KEYS[4] domains  hash: domain version key -> the version of the last commit that moved it (see
 *                  DOMAINS; core/domains names the keys)
 * ARGV[10] the fence the decision started from, when its new fences may be moved up (FENCES), or ''
 * ARGV[11] r, then r pairs (domain version key, the version the client knows it at): the domains
 *         the decision read (DOMAINS); then d, then d domain version keys the changes move; then n,
 *         then n pairs (lock id, record JSON) to write; then m, then m lock ids to delete; then w,
 *         then w channels: of waiters to wake (see Changes.wake), or, marked with a leading '~', of
 *         holders to inform (Changes.inform); then, when it records events, one JSON array of them
 *
 * DOMAINS. A decision about some scopes reads only the records of their conflict domains
 * (core/domains): the records exactly at each domain's ancestors ('o' keys) and the whole subtree
 * of each domain ('s' keys). Each key holds the version of the last commit that moved it, so the
 * script takes such a decision on a store whose version moved, as long as none of the keys it read
 * moved past the version the client knows it at: decisions on unrelated scopes never invalidate
 * each other. Every commit moves the keys of the records it changes (the client names them), and
 * #version, which older clients compare; #dv and #floor tell their commits apart (see below).
 *
 * NAMED CHANNELS. A waiter or holder the commit names hears it on its own channel whether or not
 * anyone watches, in the layout of ARGV[8]. While the store is small (48 hash fields at most) and
 * every record sits under its own id, the message carries the whole store after the commit: the
 * tombstones in full, every record, and a last word '=' and the epoch on its first line. A process
 * whose snapshot is behind (a waiter that took no part in the last hand-offs) so becomes current
 * without a round trip, and its next commit (the release, typically) does not lose its
 * compare-and-set. A message to a holder (last word '~') updates a snapshot and wakes no waiting
 * request. Older clients read either as a commit that touched two ids they do not have.
 *
 * MERGE. Every commit but one kind needs the store at the client's version. A new place in line
 * (puts of new tickets and nothing else, flag 'm') is merged into a newer store instead of being
 * sent back: its place (the tickets' fence) is then the server's, one past the last fence, so it
 * still queues behind every ticket and lock before it. Otherwise a waiter's ticket would lose the
 * race to every hand-off committed meanwhile, and a short line could drain while its waiters
 * retry (the releaser then takes the lock again: unfair). The answer is 'merged' with a sync,
 * and the client decides again on it: the way may have come free meanwhile. A merge is taken only
 * within 50 ms of its decision (ARGV[4] when the window is checked; with a clock of the client's
 * own, the server time the client gave after the 'm'). A commit sent again after a lost reply
 * comes later: ioredis resends only after reconnecting, and the first reconnect waits 100 ms. By then the ticket may have been handed its lock and be gone, and many
 * commits may have gone by, so looking for the commit's id in the changes list is not enough.
 *
 * REBASE. A step that only hands locks over in line, each freed lock to an exclusive one on its
 * scope (Changes.rebase in core/decide), comes out the same on a store that has since gained new
 * tickets, unless one is of an agent it hands a lock to. Flagged 'r' with those agents, it is
 * applied to a newer store when every commit since the client's version (among the last 8) wrote
 * only tickets ('wt_' ids) that are all still waiting, unlapsed and none of those agents' (as
 * agent_id or parent_agent_id), and the tombstones did not change. Only releases are flagged: a
 * look whose reaping handed a lock over would answer from the old snapshot. A holder's release so
 * wins against the previous holder queuing again, the usual race of a hand-off. The answer is
 * 'rebased' with a sync: committed, and the client keeps its result.
 *
 * Answers, as arrays of strings:
 *   {'ok', epoch, version, now[, previous, offset]}
 *                                          committed (or validated), at server time `now` (ms);
 *                                          on domains, also the version it was made on and how far
 *                                          its new fences moved (FENCES; '?' if resent: resync)
 *   {'time', epoch, version, now}          nothing done: the snapshot is current but the clock
 *                                          left the window; decide again at `now`
 *   {'sync', epoch, version, now, fence, tombstones or '', 'full' or 'delta', id, json, ...}
 *                                          nothing done: the snapshot is old. 'full' lists every
 *                                          lock; 'delta' lists the locks changed since the
 *                                          client's version, with '' for a deleted one
 *   {'merged', epoch, version, now, ...}   committed by MERGE, then answered as 'sync'
 *   {'rebased', epoch, version, now, ...}  committed by REBASE, then answered as 'sync'
 * A commit that arrives again after it was merged or rebased gets the same answer as then, and is
 * not applied twice: a merge while it is among the last 32 commits, a rebase always (its own entry
 * fails the check).
 */
export const COMMIT_LUA = `
local store, changes, history, domains = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ARGV = ARGV -- read often: a local is a register, the global a table lookup each time
local CHANGES_KEPT, EVENTS_KEPT, SLICE, FULL_FIELDS, REACH, RESENT_REACH = 128, 10000, 500, 48, 8, 32
local MERGE_WINDOW_MS, DOMAINS_KEPT = 50, 4096
-- Numbers are parsed from strings as rarely as possible, each once: tonumber() runs strtod() twice,
-- arithmetic on a string known to be a number once. Text is padded without string.format.
local t = redis.call('TIME')
local seconds, us = t[1] + 0, t[2] + 0
local now = seconds * 1000 + (us - us % 1000) / 1000
local micros_n = seconds * 1000000 + us
local micros = t[1] .. string.sub('000000', #t[2] + 1) .. t[2] -- TIME does not pad microseconds
local now_text = string.sub(micros, 1, -4)

-- A store without metadata is new, or lost its data (a restart without persistence, a flush): it
-- gets a new epoch, so that every cached snapshot is known to be stale.
local m = redis.call('HMGET', store, '#epoch', '#version', '#fence', '#watch', '#tomb_v', '#dv', '#floor', '#dwatch')
local epoch, version, fence, dv = m[1], m[2], m[3], m[6]
-- Metadata that cannot be read fails closed, checked before anything is written (a script that
-- fails halfway is not rolled back): nothing is decided over it, and nothing is rewritten. The
-- client says so and names REPAIR_LUA, which keeps the damage aside when asked. Each number is
-- parsed here only: from here on m holds them (false for a field missing).
for k = 2, 8 do
  local text = m[k]
  m[k] = text and tonumber(text)
  if text and not m[k] then
    return {'damaged', ({'#epoch', '#version', '#fence', '#watch', '#tomb_v', '#dv', '#floor', '#dwatch'})[k]}
  end
end
local version_n, fence_n = m[2], m[3]
if not epoch then
  epoch, version, fence, dv, version_n, fence_n = micros, '0', '0', '0', 0, 0
  redis.call('HSET', store, '#epoch', epoch, '#version', '0', '#fence', '0', '#tomb_v', '0', '#dv', '0')
  redis.call('DEL', changes, domains)
end
-- DOMAINS: #version not at #dv means an older agent-lock committed last, moving no domain version:
-- every domain version known from before is void (the floor rises to the version found).
local floor, floor_text = m[7] or 0, nil
if dv ~= version then
  floor_text = version
  floor = version_n
end

local seen_fence = tonumber(ARGV[10])
local reads = ARGV[11] + 0
local writes_at = 12 + 2 * reads
local writes = ARGV[writes_at] + 0
local puts_at = writes_at + writes + 1
local puts = ARGV[puts_at] + 0
local dels_at = puts_at + 1 + 2 * puts
local dels = ARGV[dels_at] + 0
local wakes_at = dels_at + dels + 1
local wakes = ARGV[wakes_at] + 0
local first_event = wakes_at + wakes + 1
local outside = string.byte(ARGV[3], 1) == 49 and (now < ARGV[4] + 0 or now >= ARGV[5] + 0)
-- The records to write, and the fence after the commit (MERGE rewrites both).
local records = {}
for k = 1, puts do records[k] = ARGV[puts_at + 2 * k] end
local events = ARGV[first_event]
local new_fence, new_fence_n = ARGV[6], tonumber(ARGV[6])
local merged, rebased, sync = false, false, nil

-- DOMAINS: none of the domain versions read moved past what the client knows (nor is known from
-- before the floor): nothing it read has changed, whatever else the store's version went through.
local domains_unchanged = false
if epoch == ARGV[1] and version ~= ARGV[2] and reads > 0 then
  local names = {} -- at most READS_SENT (commit.ts): unpack() is bounded by the Lua stack
  for k = 1, reads do names[k] = ARGV[10 + 2 * k] end
  local found = redis.call('HMGET', domains, unpack(names))
  domains_unchanged = true
  for k = 1, reads do
    local known = tonumber(ARGV[11 + 2 * k])
    -- A version that cannot be read counts as moved: the client syncs and compares the whole store.
    if not known or known < floor or (found[k] and (tonumber(found[k]) or math.huge) > known) then
      domains_unchanged = false
      break
    end
  end
end
if epoch ~= ARGV[1] or (version ~= ARGV[2] and not domains_unchanged) then
  -- Only this path makes the functions it uses: each is a new closure (and garbage) on every call.
  -- The words of a changes-list entry: its version, the previous one, the commit id, then the ids it
  -- touched (written so since before tickets existed).
  local function split(entry)
    local words = {}
    for word in string.gmatch(entry, '%S+') do words[#words + 1] = word end
    return words
  end

  -- The answer to a client whose snapshot is old: a delta since its version while the changes list
  -- still holds the commit made on it, else every lock; fence_now is the store's fence.
  sync = function(kind, fence_now)
    local known = tonumber(ARGV[2]) or -1
    -- A delta is possible while the changes list still holds the commit made on the client's version.
    -- Clients are mostly a commit or two behind: the list is read from its newest end, a few at a time.
    local delta = nil
    if epoch == ARGV[1] and known < tonumber(version) then
      local length = redis.call('LLEN', changes)
      local seen = {}
      local stop, count = -1, 4
      while delta == nil and -stop <= length do
        local entries = redis.call('LRANGE', changes, math.max(-length, stop - count + 1), stop)
        for k = #entries, 1, -1 do
          local words = split(entries[k])
          for w = 4, #words do seen[words[w]] = true end
          local mine = ARGV[9] ~= '' and words[3] == ARGV[9]
          if words[2] == ARGV[2] then
            -- This very commit was applied already: answer as the first time.
            -- (By how much its fences moved is not kept: '?' tells the client to resync.)
            if mine then return {'ok', epoch, words[1], now_text, words[2], '?'} end
            delta = seen
            break
          end
          -- Applied already, on a newer store: merged or rebased, answered as then with the delta; or
          -- (no flag) on domains, made on an older version than the store's: committed, as above.
          local flag = string.byte(ARGV[3], 2)
          if mine and flag ~= 109 and flag ~= 114 then return {'ok', epoch, words[1], now_text, words[2], '?'} end
          if mine then kind = flag == 114 and 'rebased' or 'merged' end
        end
        stop = stop - count
        count = count * 4
      end
    end
    local reply = {kind, epoch, version, now_text, fence_now, '', ''}
    if delta then
      local ids = {'#tombstones', '#tomb_v'}
      for id in pairs(delta) do ids[#ids + 1] = id end
      local values = redis.call('HMGET', store, unpack(ids))
      reply[6] = (tonumber(values[2] or '0') > known) and (values[1] or '[]') or ''
      reply[7] = 'delta'
      for k = 3, #ids do
        reply[#reply + 1] = ids[k]
        reply[#reply + 1] = values[k] or ''
      end
    else
      reply[6] = '[]'
      reply[7] = 'full'
      local all = redis.call('HGETALL', store)
      for k = 1, #all, 2 do
        if string.byte(all[k], 1) ~= 35 then
          reply[#reply + 1] = all[k]
          reply[#reply + 1] = all[k + 1]
        elseif all[k] == '#tombstones' then
          reply[6] = all[k + 1]
        end
      end
    end
    return reply
  end

  -- Whether this very commit (its id, ARGV[9]) is among the last RESENT_REACH entries: sent again
  -- after a lost reply, a merge must not go in twice (its ticket may have been handed over since).
  local function resent()
    if ARGV[9] == '' then return false end
    for _, entry in ipairs(redis.call('LRANGE', changes, -RESENT_REACH, -1)) do
      if string.match(entry, '^%S+ %S+ (%S+)') == ARGV[9] then return true end
    end
    return false
  end

  -- REBASE: true when every commit since the client's version (found among the last REACH) only
  -- wrote tickets that are still waiting and have not lapsed, none of them of an agent ARGV[3] names
  -- (as agent_id or parent_agent_id), and the tombstones did not change.
  local function rebasable()
    local known = tonumber(ARGV[2])
    if not known then return false end
    local entries = redis.call('LRANGE', changes, -REACH, -1)
    local ids = {'#tomb_v'}
    local reached = false
    for k = #entries, 1, -1 do
      local words = split(entries[k])
      if #words < 4 then return false end
      for w = 4, #words do
        if string.sub(words[w], 1, 3) ~= 'wt_' then return false end
        ids[#ids + 1] = words[w]
      end
      if words[2] == ARGV[2] then
        reached = true
        break
      end
    end
    if not reached then return false end
    local values = redis.call('HMGET', store, unpack(ids))
    if tonumber(values[1] or '0') > known then return false end
    local agents = {}
    for agent in string.gmatch(string.sub(ARGV[3], 4), '[^\\n]+') do agents[#agents + 1] = 'agent_id":' .. agent end
    for k = 2, #ids do
      local json = values[k]
      if not json or not string.find(json, '"status":"waiting"', 1, true) then return false end
      -- A lapsed ticket would be reaped by the step on this store, and whoever waits behind it served.
      local expires = tonumber(string.match(json, '"expires_at":(%d+)'))
      if not expires or expires <= now then return false end
      for a = 1, #agents do
        if string.find(json, agents[a], 1, true) then return false end
      end
    end
    return true
  end

  local flag = string.byte(ARGV[3], 2)
  -- Events are appended to the history, never compared: a merged place in line (queued) or a
  -- rebased hand-over (released, handed_over) records the same events on the newer store.
  local usable = epoch == ARGV[1] and not outside and ARGV[7] == ''
  -- Only a fresh merge (see MERGE): a resent one would put a ticket back that may have been handed
  -- its lock since, more than RESENT_REACH commits ago.
  local sent = string.byte(ARGV[3], 1) == 49 and tonumber(ARGV[4]) or tonumber(string.sub(ARGV[3], 3))
  local fresh = sent == nil or now - sent < MERGE_WINDOW_MS
  local mergeable = usable and flag == 109 and fresh and puts > 0 and puts <= 100 and dels == 0
    and not resent()
  if mergeable then
    local ids = {}
    for k = 1, puts do ids[k] = ARGV[puts_at - 1 + 2 * k] end
    -- Only new tickets: one already there is this very commit sent again (or a clash).
    local found = redis.call('HMGET', store, unpack(ids))
    for k = 1, puts do
      if found[k] then mergeable = false end
    end
  end
  if mergeable then
    local place = fence_n + 1
    if micros_n > place then place = micros_n end
    new_fence, new_fence_n = string.format('%.0f', place), place
    for k = 1, puts do
      records[k] = string.gsub(records[k], '"fence":%d+', '"fence":' .. new_fence, 1)
    end
    merged = true
  elseif usable and flag == 114 and rebasable() then
    rebased = true
  else
    return sync('sync', fence)
  end
end

if outside then
  return {'time', epoch, version, now_text}
end

-- FENCES. A decision on some domains took its fences from the last one it saw (ARGV[10]); others
-- may have granted since. Its new fences (those above what it saw) move up past the store's, in
-- its records and events alike, and the answer says by how much: fences keep increasing across
-- every grant, and grants on unrelated scopes never conflict over them.
local offset = 0
if not merged and seen_fence and new_fence_n > seen_fence and seen_fence < fence_n then
  offset = fence_n - seen_fence
  local function shift(n)
    n = tonumber(n)
    if n > seen_fence then n = n + offset end
    return '"fence":' .. string.format('%.0f', n)
  end
  new_fence_n = new_fence_n + offset
  new_fence = string.format('%.0f', new_fence_n)
  for k = 1, puts do records[k] = string.gsub(records[k], '"fence":(%d+)', shift, 1) end
  if events then events = string.gsub(events, '"fence":(%d+)', shift) end
end
local grown = new_fence ~= fence and new_fence_n > fence_n
if puts == 0 and dels == 0 and not events and ARGV[7] == '' and not grown then
  -- Only a decision on domains is told the version it went in on and its fences' move (FENCES).
  if reads == 0 then return {'ok', epoch, version, now_text} end
  return {'ok', epoch, version, now_text, version, offset == 0 and '0' or string.format('%.0f', offset)}
end

-- Versions, like fences, never repeat, even after a restore from an older snapshot: they follow
-- the server's clock in microseconds.
local previous = version
local next_n = version_n + 1
if next_n > micros_n then
  version = string.format('%.0f', next_n)
else
  version = micros
end
local fields = {'#version', version, '#dv', version}
-- DOMAINS: each domain version the changes move (ARGV after writes_at) takes this commit's version.
if writes > 0 then
  local added = 0
  for from = 1, writes, SLICE do
    -- Made with room for four keys (a commit on one resource moves two): a growing table is rehashed.
    local moved, n = {nil, nil, nil, nil, nil, nil, nil, nil}, 0
    for k = from, math.min(from + SLICE - 1, writes) do
      moved[n + 1], moved[n + 2] = ARGV[writes_at + k], version
      n = n + 2
    end
    added = added + redis.call('HSET', domains, unpack(moved))
  end
  -- Past DOMAINS_KEPT they all go, and the floor rises to this commit (a compare fails once, syncs).
  if added > 0 and redis.call('HLEN', domains) > DOMAINS_KEPT then
    redis.call('DEL', domains)
    floor_text = version
  end
end
-- (In a multiple assignment both lengths are taken before either field is set.)
if floor_text then fields[#fields + 1], fields[#fields + 2] = '#floor', floor_text end
if grown then fields[#fields + 1], fields[#fields + 2] = '#fence', new_fence end
if ARGV[7] ~= '' then
  fields[#fields + 1], fields[#fields + 2] = '#tombstones', ARGV[7]
  fields[#fields + 1], fields[#fields + 2] = '#tomb_v', version
end
-- The metadata goes with the lock writes in one HSET when they are few.
if puts > 0 and puts <= 100 then
  for k = 1, puts do
    fields[#fields + 1] = ARGV[puts_at - 1 + 2 * k]
    fields[#fields + 1] = records[k]
  end
elseif puts > 0 then
  -- Renumbered fences (FENCES) are in records[], not in ARGV.
  for k = 1, puts do
    redis.call('HSET', store, ARGV[puts_at - 1 + 2 * k], records[k])
  end
end
local entry = ARGV[9] ~= '' and ARGV[9] or '-'
if puts + dels == 1 then -- the usual commit, of one id: one concatenation (table.concat costs more)
  entry = version .. ' ' .. previous .. ' ' .. entry .. ' ' .. ARGV[puts == 1 and puts_at + 1 or dels_at + 1]
else
  local touched = {version, previous, entry}
  for k = 1, puts do touched[#touched + 1] = ARGV[puts_at - 1 + 2 * k] end
  for k = 1, dels do touched[#touched + 1] = ARGV[dels_at + k] end
  entry = table.concat(touched, ' ')
end
-- The list and the stream first: a key of another type fails the script here, before the locks
-- are written (a script that fails halfway is not rolled back).
-- Trimmed now and then, not on every commit: the list keeps at least the last CHANGES_KEPT.
if redis.call('RPUSH', changes, entry) > 2 * CHANGES_KEPT then
  redis.call('LTRIM', changes, -CHANGES_KEPT, -1)
end
-- In the same script as the change, so no crash keeps one without the other. MAXLEN ~ trims
-- whole radix-tree nodes only, which keeps it cheap.
if events then redis.call('XADD', history, 'MAXLEN', '~', EVENTS_KEPT, '*', 'e', events) end
redis.call('HSET', store, unpack(fields))
-- The deletes, in slices: unpack() is bounded by the Lua stack.
for from = dels_at + 1, dels_at + dels, SLICE do
  redis.call('HDEL', store, unpack(ARGV, from, math.min(from + SLICE - 1, dels_at + dels)))
end
-- Listeners get the whole commit (lines: the changes-list entry, the fence, the tombstones, ''
-- unchanged, the records): which records changed (a lease not among them skips its check), and the
-- change, so a handle at the previous version moves on without a round trip. Waiters it names hear
-- it on their own channels whether or not anyone watches. DOMAIN CHANNELS: while a lease listens
-- (#dwatch), also on ARGV[8] .. ':' .. each domain whose records it changed (its 'o' write keys).
local watched, dwatched = m[4] and now < m[4], m[8] and now < m[8]
local fence_after = grown and new_fence or fence
if watched or dwatched or wakes > 0 then
  local message = {entry, fence_after, ARGV[7]}
  for k = 1, puts do message[#message + 1] = records[k] end
  local text = table.concat(message, '\\n')
  if watched then redis.call('PUBLISH', ARGV[8], text) end
  for k = writes_at + 1, dwatched and writes_at + writes or 0 do
    if string.byte(ARGV[k], 1) == 111 then redis.call('PUBLISH', ARGV[8] .. ':' .. string.sub(ARGV[k], 2), text) end
  end
  -- The processes named get the whole store after this commit while it is small: a snapshot of
  -- theirs that is behind becomes current without a round trip (their next commit is a release,
  -- which would otherwise lose its compare-and-set and sync). The layout stays that of ARGV[8], so
  -- that older clients read it as before: the tombstones are given in full and the records are all
  -- of the store's; a last word '=' and the epoch on the first line says so (an id older clients
  -- find nothing under). Only records stored under their own id qualify: a field whose JSON names
  -- another id is left to a sync, which reads it as unreadable (fail closed). Else the message.
  local full = nil
  if wakes > 0 and redis.call('HLEN', store) <= FULL_FIELDS then
    local all = redis.call('HGETALL', store)
    full = {entry .. ' =' .. epoch, fence_after, '[]'}
    for k = 1, #all, 2 do
      local field = all[k]
      if string.byte(field, 1) ~= 35 then
        -- (A field with a quote or backslash in it could pass that test with JSON that says otherwise.)
        if string.sub(all[k + 1], 1, #field + 8) ~= '{"id":"' .. field .. '"' or string.find(field, '["\\\\]') then
          full = nil
          break
        end
        full[#full + 1] = all[k + 1]
      elseif field == '#tombstones' then
        full[3] = all[k + 1]
      end
    end
  end
  -- A channel given as '~' and a name is a holder's, to inform (not wake): a last word '~' on the
  -- first line marks its message (older clients, again, find nothing under that id).
  local told, message = nil, full and table.concat(full, '\\n') or text
  for k = wakes_at + 1, wakes_at + wakes do
    if string.byte(ARGV[k], 1) == 126 then
      if not told then
        local first = string.find(message, '\\n', 1, true)
        told = string.sub(message, 1, first - 1) .. ' ~' .. string.sub(message, first)
      end
      redis.call('PUBLISH', string.sub(ARGV[k], 2), told)
    else
      redis.call('PUBLISH', ARGV[k], message)
    end
  end
end
-- A merged or rebased commit is answered as a sync from the client's version, with the fence after.
if merged then return sync('merged', fence_after) end
if rebased then return sync('rebased', fence_after) end
if reads == 0 then return {'ok', epoch, version, now_text} end -- else as above, on domains (FENCES)
return {'ok', epoch, version, now_text, previous, offset == 0 and '0' or string.format('%.0f', offset)}
`;
