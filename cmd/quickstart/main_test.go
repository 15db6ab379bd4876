package main

import (
	"strings"
	"testing"
)

// TestQuickStart runs the README's quick start and checks what it prints.
func TestQuickStart(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `{"user":"ada"} true
1
true
login allowed: true
login allowed: true
login allowed: false
`
	if got := out.String(); got != want {
		t.Errorf("quick start printed\n%s\nwant\n%s", got, want)
	}
}
