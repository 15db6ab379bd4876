package ratelimit

import "time"

// SetAfter replaces the timer WaitN sleeps on.
func SetAfter(l *Limiter, f func(time.Duration) <-chan time.Time) { l.afterFunc = f }
