package clock

import (
	"fmt"
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	t0 := time.Unix(100, 5)
	m := NewManual(t0)
	if got := m.Now(); got != t0.UnixNano() {
		t.Fatalf("Now = %d want %d", got, t0.UnixNano())
	}
	if got := m.Advance(time.Second); got != t0.Add(time.Second).UnixNano() {
		t.Fatalf("Advance = %d", got)
	}
	m.Advance(-2 * time.Second)
	if !m.Time().Equal(t0.Add(-time.Second)) {
		t.Fatalf("Time = %v want %v", m.Time(), t0.Add(-time.Second))
	}
	m.Set(t0)
	if m.Now() != t0.UnixNano() {
		t.Fatal("Set did not set")
	}
	var zero Manual
	if zero.Now() != 0 {
		t.Fatal("zero Manual does not read 0")
	}
}

func TestRealIsMonotonicAndNearUnix(t *testing.T) {
	var r Real
	a := r.Now()
	b := r.Now()
	if b < a {
		t.Fatalf("Real went backwards: %d then %d", a, b)
	}
	if d := time.Duration(a - time.Now().UnixNano()); d > time.Minute || d < -time.Minute {
		t.Fatalf("Real is %v away from the wall clock", d)
	}
}

func ExampleManual() {
	m := NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m.Advance(90 * time.Minute)
	fmt.Println(m.Time().UTC().Format(time.Kitchen))
	// Output: 1:30AM
}
