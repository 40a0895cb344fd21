package dev.placementaudit.store.db;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Connections without a pool, for a command that queries once and exits: the first request gets the connection the
 * open already made (to check the store is there), each later one a new connection. A pool would open connections
 * of its own beside it and start threads to keep them, which a query pays for and never uses.
 */
final class DirectConnections implements DataSource, AutoCloseable {
    private final String url;
    private final Properties properties;
    private final String schema;
    private final AtomicReference<Connection> first;

    DirectConnections(String url, Properties properties, String schema, Connection first) {
        this.url = url;
        this.properties = properties;
        this.schema = schema;
        this.first = new AtomicReference<>(first);
    }

    @Override
    public Connection getConnection() throws SQLException {
        Connection given = first.getAndSet(null);
        if (given != null) {
            return given;
        }
        Connection c = Dialect.of(url).connect(url, properties);
        try {
            if (schema != null) {
                c.setSchema(schema);
            }
        } catch (SQLException e) {
            c.close();
            throw e;
        }
        return c;
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("the store's credentials are fixed when it is opened");
    }

    /** Closes the first connection if nobody took it; every other one its caller closes. */
    @Override
    public void close() throws SQLException {
        Connection unused = first.getAndSet(null);
        if (unused != null) {
            unused.close();
        }
    }

    @Override
    public PrintWriter getLogWriter() {
        return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        // no log
    }

    @Override
    public void setLoginTimeout(int seconds) {
        // bounded by the properties (connectTimeout, loginTimeout on PostgreSQL)
    }

    @Override
    public int getLoginTimeout() {
        return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
        if (type.isInstance(this)) {
            return type.cast(this);
        }
        throw new SQLException("not a wrapper of " + type.getName());
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
        return type.isInstance(this);
    }
}
