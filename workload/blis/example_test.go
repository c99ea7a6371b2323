package blis_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/servesim/servesim/workload"
	"github.com/servesim/servesim/workload/blis"
)

// Three requests written as a BLIS TraceV2 trace (`blis replay
// --trace-header h.yaml --trace-data d.csv` replays them) and read back as
// a servesim workload, identical.
func Example() {
	reqs := workload.Requests{
		{ID: 0, Arrival: 0, InputTokens: 512, OutputTokens: 128},
		{ID: 1, Arrival: 250 * time.Millisecond, InputTokens: 1024, OutputTokens: 64},
		{ID: 2, Arrival: 1500 * time.Millisecond, InputTokens: 300, OutputTokens: 200},
	}
	var header, data bytes.Buffer
	w, err := blis.WriteTrace(&header, &data, blis.Header{}, reqs)
	if err != nil {
		panic(err)
	}
	fmt.Println(w)
	fmt.Print(header.String())
	row := strings.Split(data.String(), "\n")[2] // request 1
	fmt.Println(row)

	tr, err := blis.NewTrace(&header, "h.yaml", &data, "d.csv", blis.Options{})
	if err != nil {
		panic(err)
	}
	for {
		r, err := tr.Next()
		if err == io.EOF {
			break
		}
		fmt.Println(r.ID, r.Arrival, r.InputTokens, r.OutputTokens)
	}
	// Output:
	// 3 requests, 0 prefix groups
	// trace_version: 3
	// time_unit: microseconds
	// mode: generated
	// warm_up_requests: 0
	// 1,,,,,0,,0,true,1024,64,0,0,0,0,0,,0,0,250000,250000,0,0,0,,,
	// 0 0s 512 128
	// 1 250ms 1024 64
	// 2 1.5s 300 200
}
