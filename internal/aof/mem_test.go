package aof_test

import (
	"bytes"
	"io"
	"runtime"
)

type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.total = ms.TotalAlloc
}

func runtimeGosched() { runtime.Gosched() }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
