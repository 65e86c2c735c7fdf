# A production-shaped image of the engram binary (docker is not available on the build
# machines; this file is kept valid for deployments elsewhere).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/engram /usr/local/bin/engram
WORKDIR /srv/engram
VOLUME /srv/engram/data
ENTRYPOINT ["engram"]
CMD ["run"]
