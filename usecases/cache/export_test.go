package cache

// Waiters reports how many callers wait for the load of key (absent from
// the store) in flight in c, for tests that need a caller to have joined
// a flight before they go on.
func Waiters(c *Cache, key string) int {
	c.group.mu.Lock()
	defer c.group.mu.Unlock()
	if f, ok := c.group.calls[flightKey(key, 0, true)]; ok {
		return f.waiters
	}
	return 0
}
