package dev.placementaudit.worker.pipeline;

/** What the loop asks each time it has made its producer: abort what older incarnations left open; returns how many. */
interface LeftOpen {
    /** For a loop whose broker cannot be asked (Kafka's mock clients). */
    LeftOpen NONE = () -> 0;

    int abortLeftOpen();
}
