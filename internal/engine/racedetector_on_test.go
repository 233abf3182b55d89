//go:build race

package engine_test

// raceDetector is set when the tests run under the race detector, which
// makes them several times slower: long suites then sample.
const raceDetector = true
