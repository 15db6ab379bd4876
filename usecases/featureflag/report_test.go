package featureflag_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Enabled answers off when the flag's state cannot be read, and that
// decision and its cause are logged with the flag's name; the store
// failure reaches the hook.
func TestEnabledReportsFailClosed(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	logs, logger := storetest.NewLogs()
	var hooked []string
	s, err := featureflag.New(featureflag.Config{Backend: flaky, Logger: logger, OnError: func(_ context.Context, name string, err error) { hooked = append(hooked, name) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, "checkout", featureflag.State{Enabled: true, Rollout: featureflag.Buckets}, "ops", "launch"); err != nil {
		t.Fatal(err)
	}
	flaky.Down.Store(true)
	if _, _, err := s.Get(ctx, "checkout"); err == nil {
		t.Fatal("Get with the store down: got nil, want an error")
	}
	if s.Enabled(ctx, "other", "u1") {
		t.Error("Enabled with the store down: got true, want false")
	}
	var msgs []string
	for _, r := range logs.Records() {
		msgs = append(msgs, r.Msg)
		if !strings.Contains(r.Attrs["err"], "injected failure") {
			t.Errorf("record %q: err = %q, want the cause", r.Msg, r.Attrs["err"])
		}
	}
	want := []string{"tide: flag read failed", "tide: flag read failed", "tide: flag state unknown; answering off (fail closed)"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("records: got %q, want %q", msgs, want)
	}
	if strings.Join(hooked, ",") != "checkout,other" {
		t.Errorf("hook: got %q, want checkout,other", hooked)
	}
}
