package dev.locker.spi;

/**
 * A transaction of a key-column-value store. Stores without transactions apply each mutation at once and treat
 * commit and rollback as no-ops; lockers never rely on rollback.
 */
public interface StoreTransaction {

    /** Makes the transaction's writes durable (a no-op for stores without transactions). */
    void commit();

    /** Discards the transaction's writes (a no-op for stores without transactions). */
    void rollback();
}
