package workload

import (
	"testing"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// TestMain says in one line which tests skipped (sharedTrace,
// mooncakeFile) or ran without their real-trace inputs (seedLines,
// mooncakeData) when ../shared/traces is missing, which plain go test
// ./... would not show.
func TestMain(m *testing.M) { sharedtraces.Main(m) }
