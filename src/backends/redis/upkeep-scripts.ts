/**
 * The Redis store's small scripts beside the commit: keeping commits published while someone
 * listens, and `alock repair`.
 */
/**
 * Keeps the store's #watch (or the field ARGV[2] names: '#dwatch', for the channels of domains) at
 * least ARGV[1] ms past the server's time: commits publish until then.
 */
export const WATCH_LUA = `
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local field = ARGV[2] == '#dwatch' and '#dwatch' or '#watch'
if until_ms > tonumber(redis.call('HGET', KEYS[1], field) or '0') then
  redis.call('HSET', KEYS[1], field, string.format('%.0f', until_ms))
end
return 1
`;

/**
 * `alock repair`: moves the fields the client found unreadable (ARGV: field, value as read, ...)
 * from the store hash into a hash of damage (KEYS[3], kept), each only while it still holds the
 * value the client judged, so that a record a commit rewrote meanwhile stays. Then every metadata
 * field but the tombstones goes and the changes list is emptied: the next commit starts a new epoch
 * (every cached snapshot resyncs), and fences go on from the server's clock, above all granted
 * before. Answers how many fields moved.
 */
export const REPAIR_LUA = `
local store, changes, aside = KEYS[1], KEYS[2], KEYS[3]
local moved, meta = 0, false
for k = 1, #ARGV, 2 do
  local field, value = ARGV[k], ARGV[k + 1]
  if redis.call('HGET', store, field) == value then
    redis.call('HSET', aside, field, value)
    redis.call('HDEL', store, field)
    moved = moved + 1
    if string.byte(field, 1) == 35 then meta = true end
  end
end
if moved > 0 then
  -- A new epoch at the next commit: every cached snapshot, which may hold what moved, resyncs.
  redis.call('HDEL', store, '#epoch', '#version', '#fence', '#tomb_v')
  redis.call('DEL', changes)
end
return moved
`;
