//go:build race

package docs

// raceEnabled: the tests run under the race detector, so the tradewire
// they build does too, from the packages already compiled that way.
const raceEnabled = true
