package main

import (
	"testing"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// TestMain says in one line which tests skipped for want of
// ../shared/traces, which plain go test ./... would not show.
func TestMain(m *testing.M) { sharedtraces.Main(m) }
