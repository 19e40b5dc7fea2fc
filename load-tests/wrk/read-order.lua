-- GET /v1/orders/{id}, each time one of the ids in the file WRK_IDS (one a line) at random: a buyer's page polling
-- its order. WRK_KEY is the user API key.
local key = os.getenv("WRK_KEY") or "dev-user-key"
local file = os.getenv("WRK_IDS") or "target/reads-cpu-ids.txt"
local ids = {}

function init(args)
  for line in io.lines(file) do
    ids[#ids + 1] = line
  end
  math.randomseed(os.time())
end

function request()
  local headers = {}
  headers["Authorization"] = "Bearer " .. key
  return wrk.format("GET", "/v1/orders/" .. ids[math.random(#ids)], headers)
end
