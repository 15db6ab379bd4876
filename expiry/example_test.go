package expiry_test

import (
	"fmt"

	"github.com/tidekv/tide/expiry"
)

func ExampleIndex() {
	x := expiry.NewIndex()
	x.Add(expiry.Item{Deadline: 300, Slot: 1})
	x.Add(expiry.Item{Deadline: 100, Slot: 2})
	x.Add(expiry.Item{Deadline: 200, Slot: 3})
	for {
		it, ok := x.PopDue(250) // everything due at time 250, earliest first
		if !ok {
			break
		}
		fmt.Println(it.Slot, it.Deadline)
	}
	fmt.Println("left:", x.Len())
	// Output:
	// 2 100
	// 3 200
	// left: 1
}
