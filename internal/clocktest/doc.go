// Package clocktest drives, from tests, code that takes a k8s.io/utils/clock clock. The
// time always lives in a k8s.io/utils/clock/testing fake; this package only adds what
// tests of waiting code need on top of it:
//
//   - Clock is a clocktesting.FakeClock that records every wait started on it (NewTimer,
//     After) and, while it steps, ends each wait as soon as it starts by stepping the fake
//     time by the wait. Code that sleeps on it (internal/pace.Sleep) then returns at once,
//     having seen the time it slept pass, and the test reads the waits in order. A Clock
//     that holds leaves its waiters waiting, so a test can end a wait with the context
//     instead (AwaitWaits tells it when a wait has begun).
//   - Ticking is a clock.PassiveClock whose time moves on by a fixed step at every read,
//     for code that must never see the same instant twice; unlike
//     clocktesting.SimpleIntervalClock, it is safe for concurrent use.
package clocktest
