-- Feeds pre-signed, unique webhook bodies to wrk. BODIES names a file of lines
-- "<hex signature> <body>"; thread i of n takes lines i, i+n, i+2n... so no two requests
-- carry the same event id. Prints a JSON summary at the end.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("index", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path = os.getenv("BODIES")
  sigs, bodies, position = {}, {}, 0
  local i = 0
  local mine = index or 0
  for line in io.lines(path) do
    if i % tonumber(os.getenv("THREADS") or "1") == mine then
      local space = line:find(" ")
      table.insert(sigs, line:sub(1, space - 1))
      table.insert(bodies, line:sub(space + 1))
    end
    i = i + 1
  end
end

function request()
  position = position + 1
  if position > #bodies then position = 1 end  -- wrapped: duplicates from here on
  return wrk.format("POST", nil, {["X-Signature-256"] = sigs[position],
                                  ["Content-Type"] = "application/json"}, bodies[position])
end

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "non_2xx": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
