package report

import (
	"bytes"
	"os"
	"testing"
)

// FuzzReadEvents: no input panics the event readers (JSONL and CSV): a
// damaged events file is an error naming its line, never a crash.
//
//	go test ./sim/report -run '^$' -fuzz FuzzReadEvents -fuzztime 1m
func FuzzReadEvents(f *testing.F) {
	for _, name := range []string{"testdata/events_keep=true.jsonl", "testdata/events_keep=true.csv", "testdata/events_keep=false.jsonl", "testdata/events_keep=false.csv"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("{\"id\":1}\n"))
	f.Add([]byte("id,status\n1,ok\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ReadJSONL(bytes.NewReader(data), "fuzz.jsonl")
		_, _ = ReadCSV(bytes.NewReader(data), "fuzz.csv")
	})
}
