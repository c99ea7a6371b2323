package sim

import (
	"testing"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// TestMain says in one line which tests and benchmarks skipped for want
// of ../shared/traces (the Mooncake regime), which plain go test ./...
// would not show.
func TestMain(m *testing.M) { sharedtraces.Main(m) }
