package workload

import "github.com/servesim/servesim/internal/nextinto"

// The in-place route of Generator, ChatSource and Trace (internal/nextinto): sim's runner
// has each request written into its slot through it; Next, its twin,
// has it written into a fresh result.
func init() {
	nextinto.Of = func(src any) any {
		switch s := src.(type) {
		case *Generator:
			return (*generatorInto)(s)
		case *ChatSource:
			return (*chatInto)(s)
		case *Trace:
			return (*traceInto)(s)
		}
		return nil
	}
}
