package aof_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/internal/aof"
)

// countingFS counts fsyncs, to report how many appends share one.
type countingFS struct {
	aof.FS
	syncs *atomic.Int64
}

func (c countingFS) Create(name string) (aof.File, error) {
	f, err := c.FS.Create(name)
	return countingFile{f, c.syncs}, err
}

func (c countingFS) Open(name string) (aof.File, error) {
	f, err := c.FS.Open(name)
	return countingFile{f, c.syncs}, err
}

type countingFile struct {
	aof.File
	syncs *atomic.Int64
}

func (c countingFile) Sync() error {
	c.syncs.Add(1)
	return c.File.Sync()
}

// BenchmarkAppend measures append throughput per fsync policy on the real
// file system (TMPDIR), with parallel appenders (-cpu sets how many) and a
// 16-byte key and a 64-byte value. appends/fsync shows group commit.
func BenchmarkAppend(b *testing.B) {
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond, aof.SyncNo} {
		b.Run(p.String(), func(b *testing.B) {
			osfs, err := aof.NewOS(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			var syncs atomic.Int64
			l, _, err := aof.Open(aof.Config{FS: countingFS{osfs, &syncs}, Sync: p}, 0, func(*aof.Record) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 64)
			var id atomic.Int64
			syncs.Store(0)
			b.ReportAllocs()
			b.SetBytes(16 + 64)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := aof.Record{Op: aof.OpSet, Key: fmt.Sprintf("appender-%07d", id.Add(1)), Value: value}
				for pb.Next() {
					r.Version++
					if err := l.Append(&r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if n := syncs.Load(); n > 0 {
				b.ReportMetric(float64(b.N)/float64(n), "appends/fsync")
			}
			l.Close()
		})
	}
}

// BenchmarkRecover measures Open on a log of 1M sets (16-byte key, 64-byte
// value), delivering every record to a callback that only counts: the
// log's share of a warm restart.
func BenchmarkRecover(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	l, _, err := aof.Open(aof.Config{Dir: dir, Sync: aof.SyncNo}, 0, func(*aof.Record) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers = 8
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := aof.Record{Op: aof.OpSet, Value: make([]byte, 64)}
			for i := w; i < n; i += writers {
				r.Key = fmt.Sprintf("key-%011d", i)
				r.Version = uint64(i + 1)
				if err := l.Append(&r); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	st, _ := os.Stat(dir + "/incr-0000000001.log")
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		count := 0
		l, rep, err := aof.Open(aof.Config{Dir: dir, Sync: aof.SyncNo}, 0, func(*aof.Record) error { count++; return nil })
		if err != nil || count != n || rep.Records != n {
			b.Fatalf("Open = %v, %d records delivered, want %d", err, count, n)
		}
		l.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

// BenchmarkSnapshot measures writing and reading a snapshot of 100k
// entries (16-byte key, 64-byte value) through memory.
func BenchmarkSnapshot(b *testing.B) {
	st := state{}
	var recs []aof.Record
	for i := range 100_000 {
		k := fmt.Sprintf("key-%011d", i)
		st[k] = aof.Record{Op: aof.OpSet, Key: k, Value: make([]byte, 64), Version: uint64(i + 1)}
		recs = append(recs, st[k])
	}
	src := sliceSource{[]uint64{100_000}, recs}
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := bufio.NewWriter(io.Discard)
			if _, err := aof.WriteSnapshot(w, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		data := snapshotOf(b, st, []uint64{1})
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if err := aof.ReadSnapshot(bytesReader(data), func(*aof.Record) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRewriteStall rewrites a base of 100k entries (16-byte key,
// 64-byte value) while 4 appenders run, and reports the longest append
// during the rewrites (max-append-µs) next to the longest without one
// (base-max-append-µs): the switch pauses appends for a few fsyncs, not
// for the size of the data.
func BenchmarkRewriteStall(b *testing.B) {
	var recs []aof.Record
	for i := range 100_000 {
		recs = append(recs, aof.Record{Op: aof.OpSet, Key: fmt.Sprintf("key-%011d", i), Value: make([]byte, 64), Version: uint64(i + 1)})
	}
	src := sliceSource{[]uint64{100_000}, recs}
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond} {
		b.Run(p.String(), func(b *testing.B) {
			l, _, err := aof.Open(aof.Config{Dir: b.TempDir(), Sync: p}, 0, func(*aof.Record) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var maxNs atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := aof.Record{Op: aof.OpSet, Key: fmt.Sprintf("appender-%07d", w), Value: make([]byte, 64)}
					for {
						select {
						case <-stop:
							return
						default:
						}
						r.Version++
						start := time.Now()
						if err := l.Append(&r); err != nil {
							b.Error(err)
							return
						}
						d := time.Since(start).Nanoseconds()
						for {
							m := maxNs.Load()
							if d <= m || maxNs.CompareAndSwap(m, d) {
								break
							}
						}
					}
				}()
			}
			time.Sleep(200 * time.Millisecond)
			base := maxNs.Swap(0)
			for b.Loop() {
				if _, err := l.Rewrite(src); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(maxNs.Load())/1e3, "max-append-µs")
			b.ReportMetric(float64(base)/1e3, "base-max-append-µs")
		})
	}
}
