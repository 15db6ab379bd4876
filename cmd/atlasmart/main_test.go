package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var buf bytes.Buffer
	out = &buf
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ivy comes back after 16 idle minutes: session valid = false",
		"the sliding idle timer never ran out, but the absolute 1h cap did",
		"rita's laptop: valid = false; phone: valid = false",
		"refused: tide: flag changed concurrently",
		"rev 3  10:18  by oncall",
		"429(retry 1s)",
		`→ 201 {"charge":"ch_1","amount":4999} (replayed)`,
		"→ 422",
		"card charged 1 time(s)",
		"generation 42: accepted",
		"generation 41: REJECTED",
		"200 SMS sent — 2× the budget",
		"100 SMS sent — the budget holds",
		"GET kettle-pro → not found (from cache)",
		"GET kettle → 39.90 (the aged price, at once",
		"GET kettle → 34.90 (from cache)",
		"GET toaster → 19.90 (from catalog database)",
		"stats: 4 hits, 4 misses, 5 loads, 1 background refresh(es)",
		"while the first is charging → 409, Retry-After: 1s (not run)",
		`retries after Retry-After → 201 {"charge":"ch_1","amount":1250} (replayed)`,
		"card charged 1 time(s)",
		`the client retries: key="order-2002" → {"charge":"ch_1","amount":7500} (replayed)`,
		"card charged 1 time(s) across the restart",
	}
	// Each action is told before its effects: the watcher reports a
	// revision only after the write that made it was announced.
	for _, order := range [][2]string{
		{"ana raises it to 50%", "watcher: revision 2 now (rollout 50%"},
		{"on-call throws the kill switch", "watcher: revision 3 now"},
		{"ana rolls back to revision 1", "watcher: revision 4 now (rollout 10%"},
	} {
		a, b := strings.Index(buf.String(), order[0]), strings.Index(buf.String(), order[1])
		if a < 0 || b < 0 || a > b {
			t.Errorf("demo output: %q at %d, %q at %d; want the action before its effect", order[0], a, order[1], b)
		}
	}
	for _, w := range want {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("demo output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Log(buf.String())
	}
}
