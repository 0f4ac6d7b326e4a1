/**
 * Runnable examples. Start with {@link dev.locker.examples.ContentionDemo}: two "processes" contend for one lock on any
 * backend given by URI ({@code mem:} by default), and it prints who won and why the other lost.
 */
package dev.locker.examples;
