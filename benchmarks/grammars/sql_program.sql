-- A small bookshop schema with its reports.
CREATE TABLE IF NOT EXISTS authors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name VARCHAR(120) NOT NULL,
    born DATE,
    country CHAR(2) DEFAULT 'US'
);

CREATE TABLE books (
    id INTEGER PRIMARY KEY,
    author_id INTEGER NOT NULL REFERENCES authors (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    price DECIMAL(8, 2) CHECK (price >= 0),
    published DATE,
    in_stock BOOLEAN DEFAULT TRUE,
    CONSTRAINT uq_title UNIQUE (author_id, title)
);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL,
    quantity INTEGER DEFAULT 1,
    ordered_at TIMESTAMP NOT NULL,
    FOREIGN KEY (book_id) REFERENCES books (id)
);

INSERT INTO authors (name, born, country)
VALUES ('Ursula K. Le Guin', '1929-10-21', 'US'),
       ('Stanisław Lem', '1921-09-12', 'PL'),
       ('Terry Pratchett', '1948-04-28', 'GB');

INSERT INTO books (author_id, title, price, published)
VALUES (1, 'The Dispossessed', 14.99, '1974-05-01'),
       (2, 'Solaris', 12.5, '1961-01-01'),
       (3, 'Guards! Guards!', 9.99, '1989-11-01');

UPDATE books SET price = price * 0.9, in_stock = FALSE
WHERE published < '1970-01-01' AND price > 10;

DELETE FROM orders WHERE quantity <= 0 OR ordered_at IS NULL;

/* Revenue per author over the last year, best sellers first. */
WITH recent AS (
    SELECT o.book_id, SUM(o.quantity) AS copies
    FROM orders o
    WHERE o.ordered_at >= '2024-01-01'
    GROUP BY o.book_id
)
SELECT a.name,
       COUNT(DISTINCT b.id) AS titles,
       SUM(r.copies * b.price) AS revenue,
       CASE WHEN SUM(r.copies) > 100 THEN 'bestseller' ELSE 'steady' END AS tier
FROM authors AS a
JOIN books b ON b.author_id = a.id
LEFT OUTER JOIN recent r ON r.book_id = b.id
WHERE a.country IN ('US', 'GB') AND b.title NOT LIKE '%Draft%'
GROUP BY a.name
HAVING SUM(r.copies) > 0
ORDER BY revenue DESC, a.name ASC
LIMIT 10 OFFSET 0;

SELECT title, price FROM books
WHERE price > (SELECT AVG(price) FROM books) AND NOT EXISTS (
    SELECT 1 FROM orders WHERE orders.book_id = books.id AND quantity BETWEEN 1 AND 5
)
UNION ALL
SELECT title, CAST(price AS INTEGER) FROM books WHERE author_id = 2;
