package sim

// twins turns slow twins on for one run: each field turns a fast path
// off for the run it is given to (newRunnerWith), for the tests that
// hold the path to its twin. A twin that is a field of the run rather
// than a package-level switch lets those tests run in parallel
// (t.Parallel): sim's heaviest tests are twin tests, and its suite was
// the single-core tail of `go test ./...` (TestParallelTestsTouchNoPackageVar
// holds the parallel tests to touching no package-level switch). The
// zero value is every fast path on, as Run runs.
type twins struct {
	// noMixed turns mixed moves off: a mixed step and the decode run
	// after it as two moves (runThrough, fleetMixed).
	noMixed bool
	// noThrough turns runs through finishes off: the run ends at the
	// first finish (runThrough).
	noThrough bool
	// noSpecRuns turns speculative runs off: a step a move (specRuns).
	noSpecRuns bool
	// specFar plans speculative runs to the stopping instant, cut by the
	// events inside them (Truncate and CompleteUntil; specUntil).
	specFar bool
	// noPlanAtOnce makes stepEnd queue every plan, none at once.
	noPlanAtOnce bool
	// tierNoContinue makes a replica with tiers continue no run at its
	// step ends (its engine's Continue, which a host tier alone lets
	// plan: engine's continueTier), as before issue 41's twenty-seventh
	// round: every plan ScheduleUntil's, queued after the instant's
	// events.
	tierNoContinue bool
	// noKeepEndAtOnce makes stepEnd remove a replica's end and set it
	// again when it plans at once, rather than keep it in place.
	noKeepEndAtOnce bool
	// eventsByKeys makes a KV events index take its engine's runs of
	// blocks by their keys, not by name: the slow twin of lazyRuns.
	eventsByKeys bool
	// eventsOwnTables gives each replica's KV events index a table of
	// its own, as a keyCounts a replica held them: the shape before
	// maskCounts.
	eventsOwnTables bool
	// noForgetBuckets makes a KV events index's walk look up every key
	// past a kept run's first when the index has dropped a key since the
	// run was kept, as before forgotAt.
	noForgetBuckets bool
	// keepRemovalWakes makes a KV events index keep for walk the runs
	// by name a removal wakes (wakeAll), as it keeps those a walk or a
	// kept run wakes: the slow twin of lazyRuns.unkept.
	keepRemovalWakes bool
	// forgetUnseen makes a KV events index count every key it drops as
	// forgotten (forgot, forgotAt), as before maskCounts.drop, not only
	// those a walk found or a kept run holds.
	forgetUnseen bool
	// dropEach makes a KV events index drop each key of a removal by
	// maskCounts.drop, not the run of its last copies unseen in one loop
	// (maskCounts.dropUnseen).
	dropEach bool
	// removedReversed makes a KV events index's engine reverse an
	// eviction's removals into a buffer and publish them as a run
	// (KVEvents), as before the index took them in the blocks' order
	// (eventIndex.KVRemovedLastFirst).
	removedReversed bool
	// chainsByName makes a KV events index take its engine's stored
	// runs along consecutive ids by name past its first removal too
	// (lazyRuns, woken at every removal), not by their keys, computed
	// by the engine (eventIndex.ChainKeys).
	chainsByName bool
	// noIDsInPlace turns idsInPlace off: a source copies each request's
	// ids, as its Next does for any caller.
	noIDsInPlace bool
	// noNextInto turns internal/nextinto's route off: every source's
	// Next is called.
	noNextInto bool
	// ownHeldArea makes a single replica integrate what it holds over
	// the window itself, as a fleet's replicas do, rather than take the
	// runner's integral of what the system holds (oneHeld).
	ownHeldArea bool
	// noLateAnswers makes every answer's blocks of shared content cached
	// by the decodes that compute them, not at the release (lateAnswers).
	noLateAnswers bool
	// eachLoad makes a fleet behind LeastLoaded read every replica's
	// engine at every arrival (leastOutstanding), not the loads the
	// replicas keep until they change (leastKept).
	eachLoad bool
	// noRecycleIDs keeps a request's prefix ids its own: end hands none
	// back to its source (recycleIDs), whose every prompt takes a new
	// array.
	noRecycleIDs bool
	// noHeldEach makes PrefixAffinity's balance test choose how to read
	// the replicas' held requests at every arrival (View.heldRange's
	// tests), not read the fleet's replicas kept in View.each.
	noHeldEach bool
	// balanceEach makes PrefixAffinity read the kept replicas' range
	// (View.each) for its balance test at every arrival, not only once
	// the changes since the last read may have put the fleet out of
	// balance (runner.calm).
	balanceEach bool
	// routerCall makes route call a PrefixAffinity router through the
	// Router interface (Route), as any router, not its own copy of it
	// directly (routing.prefix).
	routerCall bool
	// smallOneEnd makes a single replica keep its step end as a small
	// fleet's are kept, not as the one end (stepEnds.one).
	smallOneEnd bool
	// noThirdEnd makes a small fleet keep no third earliest step end: a
	// second lost is found again by a scan (stepEnds.ok3).
	noThirdEnd bool
	// eachPull makes pull drain a closed-loop source's NextInto until it
	// answers ErrWaiting, not stop when the source's More says the next
	// answer is ErrWaiting (moreReady).
	eachPull bool
	// armEachLanding makes a disaggregated fleet's landing arm its link
	// again (armLink) even when the link is left idle, as before land
	// skipped it.
	armEachLanding bool
	// reserveAlone makes a request handed to a decode replica whose run
	// has a reservation pending at its next step (engine.Runner.
	// ReserveLater: another request handed over inside this step) cut
	// the run (Truncate), the plan at the step's end reserving both, as
	// before the engine's reserveWith took it into that step's
	// reservation.
	reserveAlone bool
	// areaEachEvent makes the runner integrate the requests in the
	// system over the window event by event (window.area, advanceEdges),
	// not by request (areaIn: sysIn, sysOut).
	areaEachEvent bool
	// heldEachEvent makes a fleet's replicas integrate what each holds
	// over the window at each change (integrateHeld), not by request
	// (heldIn, heldAreaTo).
	heldEachEvent bool
	// settleEach makes a host tier's store settle its touches noted
	// before any store that may evict, none noted or not, and every
	// settle look for later notes covering each (coverLater), as before
	// quickSettle.
	settleEach bool
	// pinEachEvict makes a host tier's store that may evict pin the
	// loads not pinned yet, whether it could reach their keys or not, as
	// before idlePins.
	pinEachEvict bool
	// sortEachWait makes a disaggregated fleet's summary sort its KVWait
	// and FirstITL samples each, not read the KVWaits off the sorted
	// first gaps when all but a few exceed their requests' KVWaits by
	// the same (disagg.shiftedDists).
	sortEachWait bool
}
