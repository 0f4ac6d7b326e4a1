-- checkLocks: is our claim (field + nonce) alive and the senior live claim?
-- ARGV: 1 our field, 2 nonce, 3 scrub
-- Reply: {1, token, written} held; {0, holder value} another claim is senior; {-1} ours is dead or gone
local own = ARGV[1]
local now = server_now()
local s = scan(now, ARGV[3] == '1', own, ARGV[2])
if not s.own then
  return { -1 }
end
local ts, exp, tok = parse(s.own)
if not is_senior(s, own, ts) then
  return { 0, s.seniorValue }
end
return { 1, tok, ts }
