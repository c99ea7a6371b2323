package apicheck

import (
	"go/types"

	"golang.org/x/exp/apidiff"
)

// Diff lists the changes from old to new that would break a program
// written against old (incompatible), and those that would not.
func Diff(old, new *types.Package) (incompatible, compatible []string) {
	for _, c := range apidiff.Changes(old, new).Changes {
		if c.Compatible {
			compatible = append(compatible, c.Message)
		} else {
			incompatible = append(incompatible, c.Message)
		}
	}
	return incompatible, compatible
}
