// Package moduleroot finds the root of the module a command runs in (the
// nearest directory up from the working directory with a go.mod), so
// that an example's default data file, shipped in the repository, is
// found from any directory of a clone.
package moduleroot
