package keys

import (
	"strings"
	"testing"
)

func TestCheckPrefix(t *testing.T) {
	for _, c := range []struct {
		prefix, own string
		ok          bool
	}{
		{"tide:cache:", "tide:cache:", true},
		{"tide:cache:eu:", "tide:cache:", true},
		{"app:", "tide:cache:", true},
		{"app}:", "tide:cache:", true},
		{strings.Repeat("p", MaxPrefix), "tide:cache:", true},
		{"", "tide:cache:", false},
		{strings.Repeat("p", MaxPrefix+1), "tide:cache:", false},
		{"app{1}:", "tide:cache:", false},
		{"app:\n", "tide:cache:", false},
		{"app:\x00", "tide:cache:", false},
		{"app :", "tide:cache:", false},
		{"app:\xff", "tide:cache:", false},
		{"app:\x7f", "tide:cache:", false},
		{"tide:", "tide:cache:", false},
		{"t", "tide:cache:", false},
		{"tide:rl:", "tide:cache:", false},
		{"tide:sess:cache:", "tide:cache:", false},
		{"tide:ver:", "tide:cache:", false},
		{"tide:ver:x:", "tide:cache:", false},
		{"tide:v", "tide:cache:", false},
		{"a:tide:ver:", "tide:cache:", false},
		{"a:tide:ver:x", "tide:cache:", false},
		{"a:tide:v", "tide:cache:", false},
		{"a:tide:cache:", "tide:cache:", true},
		{"a:b:tide:ver:", "tide:cache:", true}, // "a:b:" is no scope
		{"a:", "tide:cache:", true},
	} {
		err := CheckPrefix(c.prefix, c.own)
		if got := err == nil; got != c.ok {
			t.Errorf("CheckPrefix(%q, %q): got %v, want ok %v", c.prefix, c.own, err, c.ok)
		}
	}
}
