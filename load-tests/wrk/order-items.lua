-- Loaded by the create scripts beside it: an order's items as JSON, 1-3 of 1-3 units each over SKU-0..SKU-(skus-1),
-- 131 SKUs apart, so that an order's SKUs differ and the orders spread over all of them.
return function(skus)
  local n = math.random(3)
  local first = math.random(skus) - 1
  local items = {}
  for i = 1, n do
    items[i] = '{"sku":"SKU-' .. ((first + (i - 1) * 131) % skus) .. '","qty":' .. math.random(3) .. '}'
  end
  return '[' .. table.concat(items, ",") .. ']'
end
