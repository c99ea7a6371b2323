// Package costmodeltest checks that a costmodel.Model keeps the contract the
// engine and the simulator rely on, in the spirit of testing/fstest.TestFS:
// any implementation, built in or a user's own, can run it in its tests.
//
// Reading guide:
//   - Check (costmodeltest.go) is the whole API: it prices a fixed, seeded
//     family of batch shapes and returns every violation it found.
//   - shapes.go draws the shapes and lists the ways a batch can grow.
//
// Use it from a test:
//
//	func TestMyModel(t *testing.T) {
//		if err := costmodeltest.Check(myModel); err != nil {
//			t.Fatal(err)
//		}
//	}
package costmodeltest
