# privboost service image: multi-stage build, slim runtime, non-root user.
#
#   docker build -t privboost .
#   docker run -p 8080:8080 -v privboost-data:/data privboost
#
# The admin key is printed once on first start (docker logs); or set
# PRIVBOOST_ADMIN_KEY. SQLite is bundled into the binary, so the runtime
# image needs no libsqlite3. `docker stop` sends SIGTERM: the server drains
# requests and puts running jobs back in the queue (they re-run on the next
# start under their existing charges).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY migrations ./migrations
COPY benches ./benches
COPY openapi.yaml ./
RUN cargo build --release --locked --bin privboost

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /data privboost \
    && mkdir -p /data && chown privboost /data
COPY --from=build /src/target/release/privboost /usr/local/bin/privboost
USER privboost
VOLUME ["/data"]
ENV PRIVBOOST_BIND=0.0.0.0:8080 \
    PRIVBOOST_DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["privboost"]
CMD ["serve"]
