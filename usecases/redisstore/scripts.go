package redisstore

import "github.com/redis/go-redis/v9"

// Every operation is one Lua script, run with EVALSHA (go-redis falls back
// to EVAL, which loads it, on NOSCRIPT). Each script starts with the
// "#!lua" shebang (Redis 7 function flags): the server then rejects a
// script that may write before it runs when it is over maxmemory, instead
// of failing on its first write after having done others, so a script
// either runs whole or not at all.
//
// Layout: every key a primitive writes is a hash {v = value, ver = version}.
// The last key a script is given is the version counter of the first key's
// Cluster slot (a plain string holding the last version issued in that
// slot, never given a TTL). Times are microseconds (Redis TIME); TTLs are
// passed in whole milliseconds, rounded up, so 1 ns is 1 ms, never 0. A
// TTL, window or interval argument must be a positive integer (checked by
// posarg before any write): the Go side refuses anything else before
// sending, and a script never reads 0 as "no TTL" nor PEXPIREs a key to 0
// (a delete). No TTL is said with "none", on Set only.
//
// A key is live if PTTL is not -2 (missing) and not 0: Redis still serves
// a key in the millisecond of its deadline, tide does not ("invisible from
// the deadline on"), so a script treats PTTL 0 as due and deletes the key.

const prelude = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%.0f', n) end
-- posarg: the argument s as a positive integer, or the script fails whole
-- with an INVALIDTTL error (store.ErrInvalidArgument) before any write.
local function posarg(s)
  local n = tonumber(s)
  if not n or n <= 0 or n ~= math.floor(n) then
    error({err = 'INVALIDTTL TTL, window or interval argument ' .. tostring(s) .. ' is not a positive integer'})
  end
  return n
end
-- uint: the stored string s as a number if it is a non-negative base-10
-- integer (digits only, at most 18: below 10^18, so that a difference of
-- two is still a valid integer reply), else nil. tonumber alone would also
-- read 'nan', 'inf', '-1', '1.5', '0x10', ' 7' and '1e3', which no script
-- writes: a field that is not uint is corrupt, never a number. exact: the
-- same, below 2^53 (a double holds it exactly): every field but a lease
-- deadline (now + a lease of up to store.MaxTTL, below 2^53 µs until
-- 2155, read with uint all the same) and the fence (which overflows with
-- store.ErrOverflow at 2^53).
local function uint(s)
  if type(s) == 'string' and #s <= 18 and string.find(s, '^%d+$') then return tonumber(s) end
  return nil
end
local function exact(s)
  local n = uint(s)
  if n and n < 9007199254740992 then return n end
  return nil
end
-- version: whether s is a version a script issued (a positive exact uint).
local function version(s)
  local n = exact(s)
  return n ~= nil and n > 0
end
-- primitive: whether the live key k holds a value with a version (a hash
-- with field v and a valid ver: Set wrote it, or a fence, an audit log, a
-- token bucket or a fixed window). foreign() is the reply for one that
-- does not: every primitive reports such a key as store.ErrCorrupt, never
-- as a value. plain: a primitive with no other field, as Set writes it
-- (the fence and the audit log must be plain).
local function primitive(k)
  return redis.call('TYPE', k)['ok'] == 'hash' and redis.call('HEXISTS', k, 'v') == 1 and version(redis.call('HGET', k, 'ver'))
end
local function plain(k)
  return primitive(k) and redis.call('HLEN', k) == 2
end
local function foreign()
  return redis.error_reply('WRONGTYPE key does not hold a value written by Set or Incr')
end
local function live(k)
  local p = redis.call('PTTL', k)
  if p == -2 then return false end
  if p == 0 then redis.call('DEL', k) return false end
  return true
end
-- pttl_us: the key's TTL in microseconds, 0 if it has none.
local function pttl_us(k)
  local p = redis.call('PTTL', k)
  if p < 0 then return 0 end
  return p * 1000
end
-- nextver issues the next version of counter c. It is floored at the clock
-- (microseconds), so that even a lost counter (FLUSHALL, a restart without
-- persistence, an eviction under a wrong maxmemory-policy) never issues a
-- version again unless the clock went backwards.
local function nextver(c, now)
  local v = tonumber(redis.call('GET', c) or '0') + 1
  if v < now then v = now end
  local s = fmt(v)
  redis.call('SET', c, s)
  return s
end
`

// scriptSource maps each script to its source, for EVAL after NOSCRIPT.
var scriptSource = map[*redis.Script]string{}

// script is a script that may grow memory: refused whole when the server
// is over maxmemory.
func script(body string) *redis.Script { return newScript("#!lua", body) }

// shrinkScript is a script that only reads or deletes: it runs even when
// the server is over maxmemory (reads and deletes always work, as in the
// engine).
func shrinkScript(body string) *redis.Script { return newScript("#!lua flags=allow-oom", body) }

func newScript(shebang, body string) *redis.Script {
	src := shebang + prelude + body
	s := redis.NewScript(src)
	scriptSource[s] = src
	return s
}

// getScript: KEYS key. → nil | {value, version, pttl_ms}
var getScript = shrinkScript(`
local k = KEYS[1]
if not live(k) then return false end
if not primitive(k) then return foreign() end
local r = redis.call('HMGET', k, 'v', 'ver')
return {r[1] or '', r[2] or '0', redis.call('PTTL', k)}
`)

// setScript: KEYS key, ctr; ARGV value, ttl_ms ('none': none), ifabsent
// ('1': only if the key is absent), ifver ('0': none). The write replaces
// the key whole, TTL included. → nil (condition failed) | version
var setScript = script(`
local k = KEYS[1]
if ARGV[2] ~= 'none' then posarg(ARGV[2]) end
local found = live(k)
if ARGV[3] == '1' and found then return false end
if ARGV[4] ~= '0' and (not found or redis.call('HGET', k, 'ver') ~= ARGV[4]) then return false end
local ver = nextver(KEYS[2], now_us())
if found then redis.call('DEL', k) end
redis.call('HSET', k, 'v', ARGV[1], 'ver', ver)
if ARGV[2] ~= 'none' then redis.call('PEXPIRE', k, ARGV[2]) end
return ver
`)

// delScript: KEYS key; ARGV version ('0': any). → 1 deleted | 0
var delScript = shrinkScript(`
local k = KEYS[1]
if not live(k) then return 0 end
if ARGV[1] ~= '0' and redis.call('HGET', k, 'ver') ~= ARGV[1] then return 0 end
redis.call('DEL', k)
return 1
`)

// tokenBucketScript: KEYS key, ctr; ARGV capacity, interval_us, cost. The
// key's v is the theoretical arrival time (tat) in microseconds, its kd
// 'tb' (a key of another kind is corrupt, never read as a bucket). → {-1}
// corrupt | {allowed, remaining, retry_us, reset_us}
var tokenBucketScript = script(`
local k = KEYS[1]
local capn, iv, cost = tonumber(ARGV[1]), posarg(ARGV[2]), tonumber(ARGV[3])
local now = now_us()
local burst = capn * iv
local tat = now
if live(k) then
  local r = redis.call('HMGET', k, 'v', 'kd')
  local t = exact(r[1])
  if not t or r[2] ~= 'tb' then return {-1} end
  if t > tat then tat = t end
end
local nxt = tat + cost * iv
if nxt - now > burst then
  local rem = math.floor((burst - (tat - now)) / iv)
  if rem < 0 then rem = 0 end
  return {0, rem, nxt - now - burst, tat - now}
end
if cost > 0 then
  redis.call('HSET', k, 'v', fmt(nxt), 'kd', 'tb', 'ver', nextver(KEYS[2], now))
  redis.call('PEXPIRE', k, fmt(math.ceil((nxt - now) / 1000)))
end
return {1, math.floor((burst - (nxt - now)) / iv), 0, nxt - now}
`)

// fixedWindowScript: KEYS key, ctr; ARGV limit, window_ms, cost. The key's
// v is the count, its kd 'fw'. → {-1} corrupt | {allowed, remaining,
// retry_us, reset_us}
var fixedWindowScript = script(`
local k = KEYS[1]
local limit, wms, cost = tonumber(ARGV[1]), posarg(ARGV[2]), tonumber(ARGV[3])
local found = live(k)
local n = 0
local ttl = wms * 1000
if found then
  local r = redis.call('HMGET', k, 'v', 'kd')
  n = exact(r[1])
  if not n or r[2] ~= 'fw' then return {-1} end
  ttl = pttl_us(k)
end
if cost > limit - n then
  local rem = limit - n
  if rem < 0 then rem = 0 end
  return {0, rem, ttl, ttl}
end
if cost > 0 then
  local ver = nextver(KEYS[2], now_us())
  if found then
    redis.call('HINCRBY', k, 'v', ARGV[3])
    redis.call('HSET', k, 'ver', ver)
  else
    redis.call('HSET', k, 'v', ARGV[3], 'kd', 'fw', 'ver', ver)
    redis.call('PEXPIRE', k, ARGV[2])
  end
elseif not found then
  ttl = 0
end
return {1, limit - n - cost, 0, ttl}
`)

// slidingWindowScript: KEYS key, ctr; ARGV limit, window_us, cost,
// window_ms. The key is a sorted set of admissions scored by their time in
// microseconds; members are unique ids (a version number and an index).
// → {allowed, remaining, retry_us, reset_us}
var slidingWindowScript = script(`
local k = KEYS[1]
local limit, w, cost = tonumber(ARGV[1]), posarg(ARGV[2]), tonumber(ARGV[3])
posarg(ARGV[4])
local now = now_us()
redis.call('ZREMRANGEBYSCORE', k, '-inf', fmt(now - w))
local n = redis.call('ZCARD', k)
local reset = 0
if n > 0 then
  local last = redis.call('ZRANGE', k, -1, -1, 'WITHSCORES')
  reset = tonumber(last[2]) + w - now
end
if n + cost > limit then
  local i = n + cost - limit - 1
  local e = redis.call('ZRANGE', k, i, i, 'WITHSCORES')
  local rem = limit - n
  if rem < 0 then rem = 0 end
  return {0, rem, tonumber(e[2]) + w - now, reset}
end
if cost > 0 then
  local id = nextver(KEYS[2], now)
  local score = fmt(now)
  local args = {}
  for i = 1, cost do
    args[#args + 1] = score
    args[#args + 1] = id .. ':' .. i
    if #args >= 1000 then
      redis.call('ZADD', k, unpack(args))
      args = {}
    end
  end
  if #args > 0 then redis.call('ZADD', k, unpack(args)) end
  redis.call('PEXPIRE', k, ARGV[4])
  reset = w
end
return {1, limit - n - cost, 0, reset}
`)

// idempotencyScript: KEYS key, ctr; ARGV op (claim, complete, release,
// inspect), fingerprint, owner, lease_us, retention_ms, result. The record
// is a hash {st = 'p' | 'c', fp, own, ld = lease deadline (µs), res, ver}.
// → {-1} corrupt | {outcome (an idem* constant of decide.go),
// stored_result, holder, prev_owner, lease_left_us, ttl_us}
var idempotencyScript = script(`
local k = KEYS[1]
local op, fp, owner = ARGV[1], ARGV[2], ARGV[3]
if op == 'claim' then posarg(ARGV[4]) posarg(ARGV[5]) end
local now = now_us()
if not live(k) then
  if op ~= 'claim' then return {0, '', '', '', 0, 0} end
  redis.call('HSET', k, 'st', 'p', 'fp', fp, 'own', owner, 'ld', fmt(now + tonumber(ARGV[4])), 'res', '', 'ver', nextver(KEYS[2], now))
  redis.call('PEXPIRE', k, ARGV[5])
  return {1, '', '', '', 0, tonumber(ARGV[5]) * 1000}
end
local r = redis.call('HMGET', k, 'st', 'fp', 'own', 'ld', 'res')
local st, rfp, own, ld, res = r[1], r[2], r[3], uint(r[4]), r[5]
if (st ~= 'p' and st ~= 'c') or not rfp or not own or not ld or not res then return {-1} end
local ttl = pttl_us(k)
if st == 'c' then
  if op == 'claim' and rfp ~= fp then return {5, '', '', '', 0, ttl} end
  return {4, res, '', '', 0, ttl}
end
if op == 'inspect' then return {3, '', own, '', ld - now, ttl} end
if op == 'claim' then
  if rfp ~= fp then return {5, '', '', '', 0, ttl} end
  if now < ld then return {3, '', own, '', ld - now, ttl} end
  redis.call('HSET', k, 'own', owner, 'ld', fmt(now + tonumber(ARGV[4])), 'ver', nextver(KEYS[2], now))
  return {2, '', '', own, 0, ttl}
end
if own ~= owner then return {7, '', own, '', ld - now, ttl} end
if op == 'release' then
  redis.call('DEL', k)
  return {6, '', '', '', 0, 0}
end
redis.call('HSET', k, 'st', 'c', 'res', ARGV[6], 'ver', nextver(KEYS[2], now))
return {4, ARGV[6], '', '', 0, ttl}
`)

// leaseScript: KEYS key, fence, ctr; ARGV op (acquire, renew, release,
// inspect), holder, token, ttl_ms, min_token. The lease is a hash {h =
// holder, t = token, ver}; the fence a primitive-style hash {v = highest
// token, ver} without TTL, so Get reads it. → {-1} corrupt | {-2} fence
// overflow | {ok, holder, token, ttl_us, fence}
var leaseScript = script(`
local k, f = KEYS[1], KEYS[2]
local op = ARGV[1]
if op == 'acquire' or op == 'renew' then posarg(ARGV[4]) end
local now = now_us()
local holder, token, ttl = '', '0', 0
local held = live(k)
if held then
  local r = redis.call('HMGET', k, 'h', 't')
  if not r[1] or not exact(r[2]) then return {-1} end
  holder, token, ttl = r[1], r[2], pttl_us(k)
end
local fence = 0
if live(f) then
  if not plain(f) then return {-1} end
  fence = uint(redis.call('HGET', f, 'v'))
  if not fence then return {-1} end
end
local ok = 0
if op == 'inspect' then
  if held then ok = 1 end
elseif op == 'acquire' then
  if not held then
    local t = fence + 1
    local m = tonumber(ARGV[5])
    if m > t then t = m end
    if t >= 9007199254740992 then return {-2} end
    fence = t
    holder, token, ttl = ARGV[2], fmt(t), tonumber(ARGV[4]) * 1000
    redis.call('HSET', f, 'v', token, 'ver', nextver(KEYS[3], now))
    redis.call('PERSIST', f)
    redis.call('DEL', k)
    redis.call('HSET', k, 'h', holder, 't', token, 'ver', nextver(KEYS[3], now))
    redis.call('PEXPIRE', k, ARGV[4])
    ok = 1
  end
elseif held and holder == ARGV[2] and token == ARGV[3] then
  if op == 'renew' then
    redis.call('PEXPIRE', k, ARGV[4])
    ttl = tonumber(ARGV[4]) * 1000
  else
    redis.call('DEL', k)
    holder, token, ttl = '', '0', 0
  end
  ok = 1
end
return {ok, holder, token, ttl, fmt(fence)}
`)

// flagWriteScript: KEYS key, audit, ctr; ARGV ifver ('0': key must be
// absent), value, audit record, keep. The audit log is AppendLog's
// encoding (4-byte big-endian length, then the record). → {-1} corrupt
// log | {0, current_version} | {1, new_version}
var flagWriteScript = script(`
local k, a = KEYS[1], KEYS[2]
local cur = '0'
if live(k) then
  cur = redis.call('HGET', k, 'ver')
  if not version(cur) then return {-1} end
end
if cur ~= ARGV[1] then return {0, cur} end
local log = ''
if live(a) then
  if not plain(a) then return {-1} end
  log = redis.call('HGET', a, 'v')
end
local recs = {}
local i, n = 1, #log
while i <= n do
  if i + 3 > n then return {-1} end
  local b1, b2, b3, b4 = string.byte(log, i, i + 3)
  local len = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  if i + 3 + len > n then return {-1} end
  recs[#recs + 1] = string.sub(log, i, i + 3 + len)
  i = i + 4 + len
end
local keep = tonumber(ARGV[4])
local first = 1
if keep > 0 and #recs >= keep then first = #recs - keep + 2 end
local out = {}
for j = first, #recs do out[#out + 1] = recs[j] end
local rec = ARGV[3]
out[#out + 1] = struct.pack('>I4', #rec) .. rec
local now = now_us()
local ver = nextver(KEYS[3], now)
redis.call('DEL', k)
redis.call('HSET', k, 'v', ARGV[2], 'ver', ver)
redis.call('DEL', a)
redis.call('HSET', a, 'v', table.concat(out), 'ver', nextver(KEYS[3], now))
return {1, ver}
`)
