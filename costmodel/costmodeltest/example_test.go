package costmodeltest_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

// A model that makes long contexts cheaper breaks the contract; Check says
// how.
func ExampleCheck() {
	fmt.Println(costmodeltest.Check(costmodel.Frozen{}))

	cheaperWhenLonger := costmodel.Func(func(b costmodel.Batch) time.Duration {
		if b.Empty() {
			return 0
		}
		return time.Second - time.Duration(b.DecodeContext())*time.Nanosecond
	})
	err := costmodeltest.Check(cheaperWhenLonger)
	fmt.Println(strings.SplitN(err.Error(), "\n", 2)[0])
	// Output:
	// <nil>
	// costmodeltest: adding a decode at context 4096 lowered the cost of {1 decodes, Σcontext 0, 0 drafts verified; 0 chunks, 0 tokens} from 1s to 999.995904ms
}
