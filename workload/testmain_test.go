package workload

import (
	"testing"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// TestMain says in one line that the tests replaying the real traces
// skipped when ../shared/traces is missing, which plain go test ./... would
// not show. (sharedTrace skips on its own; with sharedtraces.Path instead,
// the note would name the tests.)
func TestMain(m *testing.M) { sharedtraces.Main(m) }
