-- holder: the senior live claim's value, scrubbing dead claims on the way.
-- ARGV: 1 scrub
-- Reply: {1, value, field} or {0}
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local s = scan(server_now(), ARGV[1] == '1', nil)
if s.senior then
  return { 1, s.seniorValue, s.senior }
end
return { 0 }
