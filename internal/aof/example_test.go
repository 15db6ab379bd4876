package aof_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/tidekv/tide/internal/aof"
)

// A log records mutations; reopening it replays them. Entries already due
// at the recovery's now come back as expiry removals.
func Example() {
	dir, _ := os.MkdirTemp("", "aof-example")
	defer os.RemoveAll(dir)
	cfg := aof.Config{Dir: dir, Sync: aof.SyncAlways}

	l, _, _ := aof.Open(cfg, 0, func(*aof.Record) error { return nil })
	l.Append(&aof.Record{Op: aof.OpSet, Key: "session:1", Value: []byte("alice"), Version: 1})
	l.Append(&aof.Record{Op: aof.OpSet, Key: "session:2", Value: []byte("bob"), Version: 2, Deadline: 500})
	l.Append(&aof.Record{Op: aof.OpBatch, Batch: []aof.Record{
		{Op: aof.OpSet, Key: "payment:9", Value: []byte("done"), Version: 3, Pinned: true},
		{Op: aof.OpRemove, Key: "session:1", Version: 1, Cause: aof.CauseDeleted},
	}})
	l.Close()

	_, rep, _ := aof.Open(cfg, 1000, func(r *aof.Record) error {
		switch r.Op {
		case aof.OpSet:
			fmt.Printf("set %s=%s v%d\n", r.Key, r.Value, r.Version)
		case aof.OpRemove:
			fmt.Printf("remove %s (%v)\n", r.Key, r.Cause)
		case aof.OpBatch:
			fmt.Printf("batch of %d\n", len(r.Batch))
		}
		return nil
	})
	fmt.Printf("records %d, due %d, max version %d\n", rep.Records, rep.Due, rep.MaxVersion)
	// Output:
	// set session:1=alice v1
	// set session:2=bob v2
	// batch of 2
	// remove session:2 (expired)
	// records 3, due 1, max version 3
}

// A snapshot moves the live entries through any writer and reader.
func ExampleWriteSnapshot() {
	var buf bytes.Buffer
	src := sliceSource{versions: []uint64{7}, recs: []aof.Record{
		{Op: aof.OpSet, Key: "a", Value: []byte("1"), Version: 5},
		{Op: aof.OpSet, Key: "b", Value: []byte("2"), Version: 7},
	}}
	n, _ := aof.WriteSnapshot(&buf, src)
	fmt.Println("wrote", n)
	err := aof.ReadSnapshot(bytes.NewReader(buf.Bytes()[:buf.Len()-1]), func(*aof.Record) error { return nil })
	fmt.Println("cut short:", err)
	// Output:
	// wrote 2
	// cut short: tide: log corrupt: stream at offset 109: input ends inside a frame of 13 bytes (truncated)
}
