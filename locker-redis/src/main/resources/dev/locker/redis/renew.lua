-- renewLocks: extend our claim's expiry in place (same written time, same token), only if it is ours and alive.
-- ARGV: 1 our field, 2 nonce, 3 expiry ms, 4 scrub
-- Reply: {1, token, written} renewed; {0, holder value} another claim is senior; {-1} ours is dead or gone
local own, expms = ARGV[1], tonumber(ARGV[3])
local now = server_now()
local s = scan(now, ARGV[4] == '1', own, ARGV[2])
if not s.own then
  return { -1 }
end
local ts, exp, tok, nonce, owner = parse(s.own)
if not is_senior(s, own, ts) then
  return { 0, s.seniorValue }
end
local newexp = now + expms * 1000
redis.call('HSET', key, own, claim_value(ts, newexp, tok, nonce, owner))
keep_until(math.max(newexp, s.maxexp, s.keep), now, expms)
return { 1, tok, ts }
