// SPDX-License-Identifier: MIT
// Recovery of an event after the storage lost it, from the application's own records.
//
//     example_recovery
//
// Seats are sold and the application keeps a record of every paid order (a vector here,
// its database in real life). Then the storage comes back empty, as a Redis restarted
// without persistence would (MemoryBackend::wipe() plays that part). The next call is
// told storage_lost, not unknown_event; the event is recovered hidden, the paid orders
// are restored from the records, and the event is shown again. Paid seats stay sold;
// seats that were only held are free. Exits 0 when every step answered as described.
#include <seatlock/seatlock.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

// Prints what a step answered and whether that is what this program expects.
template <typename T>
void expect(const char* step, const seatlock::Result<T>& result, bool as_expected) {
    std::printf("%-44s %s\n", step, result ? "ok" : result.error().message().c_str());
    if (!as_expected) {
        std::printf("  ^ not what was expected\n");
        ++failures;
    }
}

}  // namespace

int main() {
    seatlock::MemoryBackend backend;
    seatlock::SeatHoldStore store(backend);
    const seatlock::EventSpec spec{
        "game42", "Tigers v Owls",
        {seatlock::ZoneSpec::named("lower", {{"A-1", "A"}, {"A-2", "A"}, {"A-3", "A"}, {"A-4", "A"}})}};
    store.create_event(spec).value();

    // The application's records of paid orders: what it would write to its own database
    // in the same step as telling the buyer "paid".
    std::vector<seatlock::RestoreCommand> paid;
    auto sell = [&](const std::string& buyer, std::vector<std::string> seats, const std::string& order_id) {
        auto hold = store.hold("game42", buyer, seatlock::named_seats("lower", std::move(seats)));
        if (!hold) return false;
        auto order = store.confirm(hold->token, order_id);
        if (!order) return false;
        paid.push_back({order->event, order->id, order->holder, order->zone, order->seats,
                        order->hold_token, order->paid_at});
        return true;
    };
    if (!sell("alice", {"A-1", "A-2"}, "pay-1") || !sell("bob", {"A-3"}, "pay-2")) {
        std::fprintf(stderr, "the sales before the loss failed\n");
        return 1;
    }
    auto carols = store.hold("game42", "carol", seatlock::named_seats("lower", {"A-4"}));  // not paid
    if (!carols) return 1;
    std::printf("sold A-1, A-2 (pay-1) and A-3 (pay-2); carol holds A-4\n");

    backend.wipe();  // the storage comes back empty
    std::printf("-- the storage lost everything --\n");

    // The store remembers that the event existed: storage_lost, not unknown_event.
    auto lost = store.hold("game42", "dave", seatlock::named_seats("lower", {"A-1"}));
    expect("dave holds A-1:", lost, lost.is(seatlock::errc::storage_lost));

    // The repair. Every step is idempotent: several processes may run it at once.
    auto recovery = store.recover_event(spec);  // back, hidden: nobody sells in it yet
    expect("recover_event:", recovery, recovery && *recovery == seatlock::Recovery::created);
    for (const auto& order : paid) {
        auto restored = store.restore_order(order);  // its seats are paid again
        expect(("restore_order " + order.order_id + ":").c_str(), restored, restored.has_value());
    }
    auto shown = store.finish_recovery("game42");  // open again
    expect("finish_recovery:", shown, shown.has_value());

    // Paid seats stay sold: nobody can hold them.
    auto again = store.hold("game42", "dave", seatlock::named_seats("lower", {"A-1"}));
    expect("dave holds A-1 (paid by pay-1):", again, again.is(seatlock::errc::seat_taken));
    // alice's payment arriving twice (a retry) finds her order, not a new sale.
    auto retried = store.confirm(paid[0].hold_token, "pay-1");
    expect("alice's confirm of pay-1, retried:", retried,
           retried && retried->seats == std::vector<std::string>{"A-1", "A-2"});
    // Holds went with the storage: carol's is unknown now, and her seat is free.
    auto carols_pay = store.confirm(carols->token, "pay-3");
    expect("carol confirms her lost hold:", carols_pay, carols_pay.is(seatlock::errc::unknown_hold));
    auto free_seat = store.hold("game42", "dave", seatlock::named_seats("lower", {"A-4"}));
    expect("dave holds A-4 (carol's lost hold):", free_seat, free_seat.has_value());

    if (failures != 0) {
        std::printf("%d steps did not answer as expected\n", failures);
        return 1;
    }
    std::printf("recovered: paid seats stay sold, the rest can be sold again\n");
    return 0;
}
