-- holder: the senior live claim's value, scrubbing dead claims on the way.
-- ARGV: 1 scrub
-- Reply: {1, value, field} or {0}
local P = lib()
local server_now, scan = P.server_now, P.scan
local s = scan(server_now(), ARGV[1] == '1', nil)
if s.senior then
  return { 1, s.seniorValue, s.senior }
end
return { 0 }
